package dev.thresher.server.cli;

import dev.thresher.bindings.Partial;
import dev.thresher.bindings.Selector;
import dev.thresher.bindings.abi.Column;
import dev.thresher.bindings.abi.ColumnType;
import dev.thresher.bindings.abi.PartialsCodec;
import dev.thresher.bindings.abi.RowBatchBuilder;
import dev.thresher.cellhost.CellHost;
import dev.thresher.cellhost.Component;
import dev.thresher.cellhost.RowBatchStream;
import dev.thresher.cellhost.RunOutcome;
import dev.thresher.coordinator.ShardTarget;
import dev.thresher.coordinator.ShardRunValidator;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Deadline;
import dev.thresher.limits.Limits;
import dev.thresher.server.admin.BindingAdmin;
import dev.thresher.server.admin.LoadRecords;
import dev.thresher.store.control.ShardRunRow;
import dev.thresher.topology.Host;
import dev.thresher.topology.Partition;
import java.io.IOException;
import java.io.Reader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Runs a component package the way a cluster would, without one: {@code run} on every simulated partition and
 * {@code reduce} over the merged partials, on the real host code (the same cell host, batch encoding, budgets,
 * slot validation and error codes), over rows from a CSV file ({@code thresher component test}).
 *
 * <p>The CSV holds the rows the selector selects: a header naming the selector's columns (others are ignored),
 * each optionally typed {@code name:type} ({@code int8}, {@code float8}, {@code text}, {@code bool},
 * {@code bytea}; a trailing {@code ?} makes it nullable), then one record per row; an unquoted empty field is
 * NULL. Untyped columns take the narrowest type every value reads as (int8, float8, bool, text). A column is
 * nullable when typed so or when it holds a NULL. The selector's {@code WHERE} is not applied: the rows are
 * taken as selected. Rows are dealt to partitions {@code 0..N-1} in order, in equal runs. Or the rows come from
 * a table of a running cluster, partition by partition, read as its leaders read them
 * ({@link #fromTable}).
 */
final class ComponentHarness {
    /** What one partition's run gave: its partials, or its failure. */
    record PartitionRun(int partition, int rows, List<Partial> partials, ThresherException failure) {
    }

    /** The whole run: each partition's, then the result or the failure that stopped it. */
    record Outcome(List<PartitionRun> runs, String resultJson, ThresherException failure) {
        boolean succeeded() {
            return failure == null;
        }
    }

    /** One partition's input as the host hands it to {@code run}: its batches, or why they could not be made. */
    record PartitionInput(int partition, int rows, List<byte[]> batches, ThresherException failure) {
    }

    /** The selected rows as read from a CSV file: the selector's columns, typed, and each row's values. */
    record Rows(List<Column> columns, List<Object[]> rows) {
    }

    private final Limits limits;

    ComponentHarness(Limits limits) {
        this.limits = limits;
    }

    /**
     * Reads the CSV rows of the selector's columns.
     *
     * @throws ThresherException {@link ErrorCode#INVALID_ARGUMENTS} naming the line and column of a bad value or a
     *     missing column
     */
    static Rows readCsv(Reader csv, Selector selector) throws IOException {
        LoadRecords.Records records = new LoadRecords.CsvReader(new java.io.BufferedReader(csv), ',', "",
                dev.thresher.limits.Limits.DEFAULTS.batchMaxBytes());
        List<LoadRecords.Field> header = records.next();
        if (header == null) {
            throw bad("the CSV is empty; its first line names the selector's columns " + selector.columns());
        }
        String[] names = new String[header.size()];
        String[] declared = new String[header.size()];
        for (int i = 0; i < header.size(); i++) {
            String h = header.get(i).text().trim();
            int colon = h.indexOf(':');
            names[i] = (colon < 0 ? h : h.substring(0, colon)).trim();
            declared[i] = colon < 0 ? null : h.substring(colon + 1).trim().toLowerCase(Locale.ROOT);
        }
        int[] at = new int[selector.columns().size()];
        for (int c = 0; c < at.length; c++) {
            at[c] = -1;
            for (int i = 0; i < names.length; i++) {
                if (names[i].equalsIgnoreCase(selector.columns().get(c))) {
                    at[c] = i;
                }
            }
            if (at[c] < 0) {
                throw bad("the CSV header " + List.of(names) + " has no column " + selector.columns().get(c)
                        + "; the selector selects " + selector.columns());
            }
        }
        List<String[]> raw = new ArrayList<>();
        List<Integer> lines = new ArrayList<>();
        for (List<LoadRecords.Field> r = records.next(); r != null; r = records.next()) {
            if (r.size() == 1 && r.get(0).isNull() && header.size() > 1) {
                continue; // a blank line
            }
            if (r.size() != header.size()) {
                throw bad("line " + records.recordLine() + ": " + r.size() + " fields; the header has " + header.size());
            }
            String[] row = new String[at.length];
            for (int c = 0; c < at.length; c++) {
                LoadRecords.Field f = r.get(at[c]);
                row[c] = f.isNull() ? null : f.text();
            }
            raw.add(row);
            lines.add(records.recordLine());
        }
        List<Column> columns = new ArrayList<>();
        for (int c = 0; c < at.length; c++) {
            String d = declared[at[c]];
            boolean nullable = d != null && d.endsWith("?");
            if (nullable) {
                d = d.substring(0, d.length() - 1).trim();
            }
            boolean hasNull = false;
            for (String[] row : raw) {
                hasNull |= row[c] == null;
            }
            ColumnType type = d == null || d.isEmpty() ? infer(raw, c) : declaredType(d, selector.columns().get(c));
            columns.add(new Column(selector.columns().get(c), type, nullable || hasNull));
        }
        List<Object[]> rows = new ArrayList<>(raw.size());
        for (int r = 0; r < raw.size(); r++) {
            Object[] values = new Object[at.length];
            for (int c = 0; c < at.length; c++) {
                try {
                    values[c] = raw.get(r)[c] == null ? null : value(columns.get(c).type(), raw.get(r)[c]);
                } catch (RuntimeException e) {
                    throw bad("line " + lines.get(r) + ", column " + columns.get(c).name() + ": '" + raw.get(r)[c]
                            + "' is not " + columns.get(c).type().name().toLowerCase(Locale.ROOT));
                }
            }
            rows.add(values);
        }
        return new Rows(columns, rows);
    }

    private static ColumnType declaredType(String d, String column) {
        return switch (d) {
            case "int8", "bigint", "int64", "int", "integer", "int4", "smallint", "int2" -> ColumnType.INT64;
            case "float8", "double precision", "float64", "double", "real", "float4", "numeric" -> ColumnType.FLOAT64;
            case "text", "varchar", "string" -> ColumnType.TEXT;
            case "bool", "boolean" -> ColumnType.BOOL;
            case "bytea", "bytes" -> ColumnType.BYTES;
            default -> throw bad("column " + column + ": type '" + d + "' is not one a batch carries: int8, float8,"
                    + " text, bool, bytea");
        };
    }

    private static ColumnType infer(List<String[]> raw, int c) {
        boolean longs = true;
        boolean doubles = true;
        boolean bools = true;
        for (String[] row : raw) {
            String v = row[c];
            if (v == null) {
                continue;
            }
            longs &= v.matches("[+-]?\\d{1,19}") && fitsLong(v);
            doubles &= isDouble(v);
            bools &= v.matches("(?i)true|false|t|f");
        }
        return longs ? ColumnType.INT64 : doubles ? ColumnType.FLOAT64 : bools ? ColumnType.BOOL : ColumnType.TEXT;
    }

    private static boolean fitsLong(String v) {
        try {
            Long.parseLong(v);
            return true;
        } catch (NumberFormatException e) {
            return false;
        }
    }

    private static final java.util.regex.Pattern NUMBER = java.util.regex.Pattern.compile(
            "\\s*[+-]?(\\d+(\\.\\d*)?|\\.\\d+)([eE][+-]?\\d+)?\\s*|(?i)\\s*[+-]?(nan|inf|infinity)\\s*");

    private static boolean isDouble(String v) {
        return NUMBER.matcher(v).matches();
    }

    private static double parseDouble(String v) {
        String t = v.trim().toLowerCase(Locale.ROOT);
        if (!NUMBER.matcher(t).matches()) {
            throw new NumberFormatException(v);
        }
        return switch (t) {
            case "inf", "+inf", "infinity", "+infinity" -> Double.POSITIVE_INFINITY;
            case "-inf", "-infinity" -> Double.NEGATIVE_INFINITY;
            case "nan", "+nan", "-nan" -> Double.NaN;
            default -> Double.parseDouble(t);
        };
    }

    private static Object value(ColumnType type, String v) {
        return switch (type) {
            case INT64 -> Long.parseLong(v.trim());
            case FLOAT64 -> parseDouble(v);
            case BOOL -> switch (v.trim().toLowerCase(Locale.ROOT)) {
                case "true", "t" -> Boolean.TRUE;
                case "false", "f" -> Boolean.FALSE;
                default -> throw new IllegalArgumentException(v);
            };
            case TEXT -> v;
            case BYTES -> v.startsWith("\\x") ? HexFormat.of().parseHex(v.substring(2)) : v.getBytes(StandardCharsets.UTF_8);
        };
    }

    /** The CSV's rows dealt to partitions {@code 0..partitions-1} in order, in equal runs, batched for the ABI. */
    List<PartitionInput> deal(Rows rows, int partitions, int abiVersion) {
        List<PartitionInput> out = new ArrayList<>();
        int n = rows.rows().size();
        for (int p = 0; p < partitions; p++) {
            List<Object[]> mine = rows.rows().subList((int) ((long) p * n / partitions), (int) ((long) (p + 1) * n / partitions));
            try {
                out.add(new PartitionInput(p, mine.size(), batches(p, rows.columns(), mine, abiVersion), null));
            } catch (ThresherException e) {
                out.add(new PartitionInput(p, mine.size(), List.of(), e));
            }
        }
        return out;
    }

    /**
     * Runs the checked package's {@code run} over each partition's input, then {@code reduce} over the merged
     * partials, with the call's {@code argumentsJson}, within one call deadline ({@code limits.callDeadlineMs}).
     * The first partition that fails ends the run, as a failure for good ends a call.
     */
    Outcome run(BindingAdmin.Checked pkg, List<PartitionInput> inputs, String argumentsJson) {
        Component component = Component.of(pkg.wasm());
        Deadline deadline = Deadline.afterMillis(System.nanoTime(), limits.callDeadlineMs());
        var budgets = pkg.manifest().budgets();
        List<PartitionRun> runs = new ArrayList<>();
        List<ShardTarget> targets = new ArrayList<>();
        List<ShardRunRow> slots = new ArrayList<>();
        Host here = new Host("harness", 1, "127.0.0.1", 1);
        try (CellHost host = CellHost.create(limits)) {
            for (int slot = 0; slot < inputs.size(); slot++) {
                PartitionInput in = inputs.get(slot);
                int p = in.partition();
                List<Partial> partials;
                try {
                    if (in.failure() != null) {
                        throw in.failure();
                    }
                    Deadline runDeadline = budgets.runDeadline(deadline);
                    long input = argumentsJson.getBytes(StandardCharsets.UTF_8).length;
                    for (byte[] b : in.batches()) {
                        input += b.length;
                    }
                    if (budgets.inputBytes() > 0 && input > budgets.inputBytes()) {
                        throw budgets.inputOverBudget(input);
                    }
                    RunOutcome out = host.run(component, RowBatchStream.of(in.batches().toArray(byte[][]::new)), argumentsJson,
                            runDeadline, budgets);
                    partials = out.partials();
                    String wireId = "harness/shard/" + slot;
                    Partition partition = new Partition(p, "harness", "harness", 0, 0, 1, 1);
                    targets.add(new ShardTarget(slot, partition, here, wireId));
                    slots.add(new ShardRunRow(slot, p, 1, wireId, here.hostId(), in.rows(), out.emitCount(), partials.size(),
                            PartialsCodec.encode(partials), true, 1));
                } catch (ThresherException e) {
                    runs.add(new PartitionRun(p, in.rows(), List.of(), e));
                    return new Outcome(runs, null, new ThresherException(e.code(), "partition " + p + ": " + e.getMessage(), e));
                }
                runs.add(new PartitionRun(p, in.rows(), partials, null));
            }
            List<Partial> merged;
            String result;
            try {
                merged = ShardRunValidator.validate(targets, slots, limits);
                Deadline reduceDeadline = budgets.runDeadline(deadline);
                result = host.reduce(component, PartialsCodec.encode(merged), argumentsJson, reduceDeadline).resultJson();
                int bytes = result.getBytes(StandardCharsets.UTF_8).length;
                if (bytes > limits.resultMaxBytes()) {
                    throw new ThresherException(ErrorCode.RESULT_TOO_LARGE, "the reduced result is " + bytes
                            + " bytes; the limit is " + limits.resultMaxBytes());
                }
            } catch (ThresherException e) {
                return new Outcome(runs, null, e);
            }
            return new Outcome(runs, result, null);
        }
    }

    /** One partition's rows as the host would hand them: one batch (ABI v1), or batches cut as a paged read cuts them. */
    private List<byte[]> batches(int partition, List<Column> columns, List<Object[]> rows, int abiVersion) {
        if (abiVersion == 1 && rows.size() > limits.rowsPerBatch()) {
            throw new ThresherException(ErrorCode.BATCH_TOO_MANY_ROWS, "partition " + partition + " has " + rows.size()
                    + " rows; a guest of ABI 1 takes one batch of at most " + limits.rowsPerBatch());
        }
        List<byte[]> out = new ArrayList<>();
        RowBatchBuilder b = new RowBatchBuilder(partition, columns, limits.rowsPerBatch(), limits.batchMaxBytes());
        int inBatch = 0;
        for (Object[] row : rows) {
            long varBytes = 0;
            for (Object v : row) {
                varBytes += v instanceof String s ? s.getBytes(StandardCharsets.UTF_8).length : v instanceof byte[] a ? a.length : 0;
            }
            if (inBatch > 0 && (inBatch == limits.rowsPerBatch() || !b.fitsRow(varBytes))) {
                if (abiVersion == 1) {
                    throw new ThresherException(ErrorCode.BATCH_TOO_LARGE, "partition " + partition
                            + " does not fit one batch of " + limits.batchMaxBytes() + " bytes (ABI 1 takes one)");
                }
                out.add(b.finish());
                b = new RowBatchBuilder(partition, columns, limits.rowsPerBatch(), limits.batchMaxBytes());
                inBatch = 0;
            }
            b.startRow();
            for (int c = 0; c < row.length; c++) {
                Object v = row[c];
                if (v == null) {
                    b.setNull(c);
                } else if (v instanceof Long l) {
                    b.setLong(c, l);
                } else if (v instanceof Double d) {
                    b.setDouble(c, d);
                } else if (v instanceof String s) {
                    b.setText(c, s);
                } else if (v instanceof Boolean x) {
                    b.setBool(c, x);
                } else {
                    b.setBytes(c, (byte[]) v);
                }
            }
            inBatch++;
        }
        out.add(b.finish());
        return out;
    }

    /**
     * Each partition of {@code table} on a running cluster, read by a node with the selector's columns and filter as a
     * leader reads it ({@code POST /admin/tables/{name}/batches}: one read-only snapshot per partition; one batch for
     * ABI 1, paged batches for ABI 2); a partition the node could not read comes with its failure.
     */
    List<PartitionInput> fromTable(AdminClient node, String table, String selector, int abiVersion)
            throws java.io.IOException, InterruptedException {
        com.fasterxml.jackson.databind.JsonNode answer = node.post(TableCommand.path(table) + "/batches",
                Map.of("selector", selector, "abiVersion", abiVersion));
        List<PartitionInput> out = new ArrayList<>();
        for (com.fasterxml.jackson.databind.JsonNode p : answer.path("partitions")) {
            List<byte[]> batches = new ArrayList<>();
            for (com.fasterxml.jackson.databind.JsonNode b : p.path("batches")) {
                batches.add(b.binaryValue());
            }
            com.fasterxml.jackson.databind.JsonNode error = p.path("error");
            out.add(new PartitionInput(p.path("partition").asInt(), p.path("rows").asInt(), batches, error.isMissingNode()
                    ? null : new ThresherException(ErrorCode.ofCode(error.path("code").asInt()), error.path("message").asText())));
        }
        return out;
    }

    /** The outcome as the command prints it. */
    static String describe(Outcome o, Map<String, String> heading) {
        StringBuilder s = new StringBuilder();
        heading.forEach((k, v) -> s.append(k).append(": ").append(v).append('\n'));
        for (PartitionRun r : o.runs()) {
            s.append("partition ").append(r.partition()).append(": ").append(r.rows()).append(" rows");
            if (r.failure() != null) {
                s.append(", failed\n");
                continue;
            }
            s.append(", ").append(r.partials().size()).append(" partials\n");
            for (Partial p : r.partials()) {
                s.append("  ").append(p.key()).append(" = ").append(p.value()).append('\n');
            }
        }
        if (o.succeeded()) {
            s.append("result: ").append(o.resultJson()).append('\n');
        } else {
            ThresherException e = o.failure();
            s.append("ERROR ").append(e.code().code()).append(' ').append(e.code().name()).append(" (")
                    .append(e.code().retryClass().name().toLowerCase(Locale.ROOT)).append("): ").append(e.getMessage()).append('\n');
        }
        return s.toString();
    }

    private static ThresherException bad(String message) {
        return new ThresherException(ErrorCode.INVALID_ARGUMENTS, message);
    }
}
