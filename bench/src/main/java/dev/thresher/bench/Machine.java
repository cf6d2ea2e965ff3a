package dev.thresher.bench;

import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/** The facts of the machine and the JVM a run measured on, for the report's header. */
final class Machine {
    private Machine() {
    }

    static Map<String, String> facts() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("cores", Runtime.getRuntime().availableProcessors() + " (as the JVM sees them)");
        String cpu = firstValue(Path.of("/proc/cpuinfo"), "model name");
        if (cpu != null) {
            m.put("CPU", cpu);
        }
        if (ManagementFactory.getOperatingSystemMXBean() instanceof com.sun.management.OperatingSystemMXBean os) {
            m.put("memory", String.format("%.1f GiB", os.getTotalMemorySize() / (double) (1L << 30)));
        }
        String pretty = firstValue(Path.of("/etc/os-release"), "PRETTY_NAME");
        m.put("OS", (pretty != null ? pretty.replace("\"", "") + ", " : "") + System.getProperty("os.name") + " "
                + System.getProperty("os.version") + " " + System.getProperty("os.arch"));
        m.put("JDK", System.getProperty("java.vm.vendor") + " " + System.getProperty("java.vm.name") + " "
                + System.getProperty("java.runtime.version"));
        m.put("JVM heap (max)", String.format("%.1f GiB", Runtime.getRuntime().maxMemory() / (double) (1L << 30)));
        m.put("GC", ManagementFactory.getGarbageCollectorMXBeans().stream().map(g -> g.getName()).collect(Collectors.joining(", ")));
        m.put("JVM flags", jvmFlags());
        return m;
    }

    /** The system's load average over the last minute, all processes included; negative where the OS has none. */
    static double loadAverage() {
        return ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
    }

    /** The JVM's flags, with paths shortened to their last element. */
    static String jvmFlags() {
        List<String> out = new ArrayList<>();
        for (String a : ManagementFactory.getRuntimeMXBean().getInputArguments()) {
            if (a.startsWith("-Dthresher.") || a.startsWith("-Djdk.module") || a.startsWith("-Dbasedir")) {
                continue;
            }
            int eq = a.indexOf('=');
            if (eq > 0 && a.substring(eq + 1).contains("/")) {
                String[] parts = a.substring(eq + 1).split(":");
                List<String> shortened = new ArrayList<>();
                for (String p : parts) {
                    if (!p.isEmpty()) {
                        shortened.add(Path.of(p).getFileName().toString());
                    }
                }
                a = a.substring(0, eq + 1) + "…/" + String.join(":…/", shortened);
            }
            out.add(a);
        }
        return String.join(" ", out);
    }

    private static String firstValue(Path file, String key) {
        try {
            for (String line : Files.readAllLines(file)) {
                int sep = line.indexOf(line.contains(":") && !line.contains("=") ? ':' : '=');
                if (sep > 0 && line.substring(0, sep).trim().equals(key)) {
                    return line.substring(sep + 1).trim();
                }
            }
        } catch (Exception e) {
            return null;
        }
        return null;
    }
}
