/** The admin services: tables (DDL, migrations, loads), deploys and binding versions, topology changes. */
package dev.thresher.server.admin;
