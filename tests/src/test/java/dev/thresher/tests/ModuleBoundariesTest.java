package dev.thresher.tests;

import static com.tngtech.archunit.lang.syntax.ArchRuleDefinition.noClasses;
import static com.tngtech.archunit.library.dependencies.SlicesRuleDefinition.slices;

import com.tngtech.archunit.core.domain.JavaClasses;
import com.tngtech.archunit.core.importer.ClassFileImporter;
import com.tngtech.archunit.core.importer.ImportOption;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** The module graph of the brief, checked on the compiled classes of every module. */
class ModuleBoundariesTest {
    private static JavaClasses classes;

    @BeforeAll
    static void importAll() {
        classes = new ClassFileImporter()
                .withImportOption(ImportOption.Predefined.DO_NOT_INCLUDE_TESTS)
                .importPackages("dev.thresher");
    }

    @Test
    void onlyCellHostImportsGraalVm() {
        noClasses().that().resideOutsideOfPackage("dev.thresher.cellhost..")
                .should().dependOnClassesThat().resideInAPackage("org.graalvm..")
                .check(classes);
    }

    /**
     * One SQL front end: every statement Thresher accepts is read by pgwire's lexer and grammars; JSqlParser reads only
     * what needs PostgreSQL's whole expression grammar, a selector and its WHERE (parsed by {@code Selector}, checked by
     * {@code WhereAllowList}, compiled for the replicas by {@code RowFilter}).
     */
    @Test
    void onlyTheSelectorsReadersUseJSqlParser() {
        noClasses().that().haveNameNotMatching("dev\\.thresher\\.bindings\\.(Selector|WhereAllowList)(\\$.*)?")
                .and().resideOutsideOfPackage("dev.thresher.store.replica..")
                .and().resideOutsideOfPackage("net.sf.jsqlparser..")
                .should().dependOnClassesThat().resideInAPackage("net.sf.jsqlparser..")
                .because("statements are read by pgwire's grammars; JSqlParser reads only a selector's expressions")
                .check(classes);
    }

    @Test
    void onlyTheNodeAssemblyImportsMicrometer() {
        noClasses().that().resideOutsideOfPackage("dev.thresher.server.node..")
                .should().dependOnClassesThat().resideInAnyPackage("io.micrometer..", "io.prometheus..")
                .check(classes);
    }

    @Test
    void frontDoorsDoNotTouchJdbc() {
        noClasses().that().resideInAnyPackage("dev.thresher.pgwire..", "dev.thresher.http..")
                .should().dependOnClassesThat()
                .resideInAnyPackage("java.sql..", "javax.sql..", "org.postgresql..", "com.zaxxer..", "dev.thresher.store..")
                .check(classes);
    }

    @Test
    void frontDoorsSpeakOnlyTheCallApi() {
        noClasses().that().resideInAnyPackage("dev.thresher.pgwire..", "dev.thresher.http..")
                .should().dependOnClassesThat()
                .resideInAnyPackage("dev.thresher.coordinator..", "dev.thresher.leader..", "dev.thresher.cellhost..",
                        "dev.thresher.wire..")
                .check(classes);
    }

    @Test
    void vocabularyModulesDependOnAlmostNothing() {
        noClasses().that().resideInAnyPackage("dev.thresher.errors..", "dev.thresher.limits..", "dev.thresher.topology..")
                .should().dependOnClassesThat()
                .resideInAnyPackage("io.netty..", "java.sql..", "com.fasterxml..", "org.graalvm..",
                        "dev.thresher.bindings..", "dev.thresher.wire..", "dev.thresher.cellhost..",
                        "dev.thresher.store..", "dev.thresher.coordinator..", "dev.thresher.leader..",
                        "dev.thresher.server..")
                .check(classes);
    }

    @Test
    void theCoordinatingAndTheLeaderSideStayApart() {
        noClasses().that().resideInAPackage("dev.thresher.coordinator..")
                .should().dependOnClassesThat().resideInAPackage("dev.thresher.leader..")
                .check(classes);
        noClasses().that().resideInAPackage("dev.thresher.leader..")
                .should().dependOnClassesThat().resideInAPackage("dev.thresher.coordinator..")
                .check(classes);
    }

    @Test
    void nothingDependsOnTheServerAssembly() {
        noClasses().that().resideOutsideOfPackage("dev.thresher.server..")
                .should().dependOnClassesThat().resideInAPackage("dev.thresher.server..")
                .check(classes);
    }

    /**
     * The rooms of {@code server}: the admin services ({@code admin}) lean on no other room; a node's assembly
     * ({@code node}) and the HTTP-handler runtime ({@code handlers}) never reach the command line or the dev
     * cluster, and the handler runtime not the node that assembles it; only the dev cluster (which starts nodes as {@code thresher node} processes) names the command line.
     */
    @Test
    void serverRoomsPointOneWay() {
        noClasses().that().resideInAPackage("dev.thresher.server.admin..")
                .should().dependOnClassesThat()
                .resideInAnyPackage("dev.thresher.server.cli..", "dev.thresher.server.dev..",
                        "dev.thresher.server.node..", "dev.thresher.server.handlers..")
                .check(classes);
        noClasses().that().resideInAnyPackage("dev.thresher.server.node..", "dev.thresher.server.handlers..")
                .should().dependOnClassesThat()
                .resideInAnyPackage("dev.thresher.server.cli..", "dev.thresher.server.dev..")
                .check(classes);
        noClasses().that().resideInAPackage("dev.thresher.server.handlers..")
                .should().dependOnClassesThat().resideInAPackage("dev.thresher.server.node..")
                .because("a node assembles the HTTP-handler runtime, not the other way round")
                .check(classes);
        noClasses().that().resideOutsideOfPackages("dev.thresher.server.cli..", "dev.thresher.server.dev..")
                .should().dependOnClassesThat().resideInAPackage("dev.thresher.server.cli..")
                .check(classes);
    }

    @Test
    void everyServerClassLivesInARoom() {
        noClasses().that().doNotHaveSimpleName("package-info").should().resideInAPackage("dev.thresher.server")
                .check(classes);
    }

    @Test
    void wireProtocolAndCellHostStayLeaves() {
        noClasses().that().resideInAnyPackage("dev.thresher.wire..", "dev.thresher.cellhost..")
                .should().dependOnClassesThat()
                .resideInAnyPackage("dev.thresher.coordinator..", "dev.thresher.leader..", "dev.thresher.store..",
                        "dev.thresher.pgwire..", "dev.thresher.http..")
                .check(classes);
    }

    @Test
    void modulesFormNoCycles() {
        slices().matching("dev.thresher.(*)..").should().beFreeOfCycles().check(classes);
    }
}
