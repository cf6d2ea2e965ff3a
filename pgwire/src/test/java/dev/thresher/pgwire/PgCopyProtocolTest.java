package dev.thresher.pgwire;

import dev.thresher.bindings.InsertCommand;
import dev.thresher.bindings.TableService;
import static dev.thresher.pgwire.BackendReader.types;
import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.pgwire.BackendReader.Message;
import io.netty.buffer.ByteBuf;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.IntConsumer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * COPY FROM STDIN and INSERT on the server's pipeline: CopyInResponse's bytes, the copy-in sub-protocol
 * (CopyData cut anywhere, CopyDone, CopyFail), a writer that fails before the client's data ends (answered
 * at once, the rest dropped), and the connection going on afterwards.
 */
class PgCopyProtocolTest {
    private static final Map<String, String> STARTUP = Map.of("user", "thresher", "database", "thresher");
    private final ExecutorService executor = Executors.newFixedThreadPool(2);

    @AfterEach
    void stop() {
        executor.shutdownNow();
    }

    /** Records what it was given; a row holding "bad" fails the load as a bad line would. */
    static final class Writer implements TableService {
        final List<String> loaded = new CopyOnWriteArrayList<>();
        final List<CopySpec> specs = new CopyOnWriteArrayList<>();
        final List<InsertCommand> inserts = new CopyOnWriteArrayList<>();

        @Override
        public long copyFrom(String tenant, String user, CopySpec spec, IntConsumer ready, InputStream data) {
            if (spec.table().equals("nope")) {
                throw new ThresherException(ErrorCode.UNKNOWN_TABLE, "there is no table nope");
            }
            specs.add(spec);
            ready.accept(3);
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            byte[] buf = new byte[7];
            try {
                for (int n = data.read(buf); n != -1; n = data.read(buf)) {
                    all.write(buf, 0, n);
                    if (all.toString(StandardCharsets.UTF_8).contains("bad")) {
                        throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "line 2, column amount: bad");
                    }
                }
            } catch (IOException e) {
                throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, e.getMessage());
            }
            String text = all.toString(StandardCharsets.UTF_8);
            loaded.add(text);
            return text.lines().count();
        }

        @Override
        public long insert(String tenant, String user, InsertCommand insert) {
            inserts.add(insert);
            return 3;
        }

        @Override
        public Loaded load(String tenant, String table, boolean header, InputStream csv) {
            throw new UnsupportedOperationException();
        }

        @Override
        public List<PartitionBatches> readBatches(String tenant, String table, String selector, int abiVersion) {
            throw new UnsupportedOperationException();
        }

        final List<dev.thresher.bindings.TableCommand> statements = new CopyOnWriteArrayList<>();

        @Override
        public String execute(String tenant, String user, dev.thresher.bindings.TableCommand command) {
            statements.add(command);
            return command.tag();
        }

        @Override
        public TableInfo create(String tenant, TableSpec spec) {
            throw new UnsupportedOperationException();
        }

        @Override
        public List<TableInfo> list(String tenant) {
            throw new UnsupportedOperationException();
        }

        @Override
        public TableInfo show(String tenant, String table) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void drop(String tenant, String table) {
            throw new UnsupportedOperationException();
        }

        @Override
        public TableInfo alter(String tenant, String table, Change change) {
            throw new UnsupportedOperationException();
        }

        @Override
        public TableInfo migrate(String tenant, String table) {
            throw new UnsupportedOperationException();
        }
    }

    private final Writer writer = new Writer();

    private PgWireProtocolTest.Connection connected(long seed) {
        PgWireConfig config = new PgWireConfig("127.0.0.1", 0, AuthMode.TRUST, "thresher", "x", "acme", Limits.DEFAULTS);
        PgWireProtocolTest.Connection c = new PgWireProtocolTest.Connection(config,
                PgWireProtocolTest.Calls.returning("{}"), seed);
        c.channel.pipeline().remove(PgWireServer.HANDLER);
        c.channel.pipeline().addLast(PgWireServer.HANDLER, new PgConnectionHandler(config,
                PgWireProtocolTest.Calls.returning("{\"ok\":1}"), new LongAdder(), new PgWireServer.Writes(writer, null, executor)));
        c.send(new FrontendBytes().startup(STARTUP));
        assertThat(types(c.receive())).endsWith("KZ");
        return c;
    }

    /** Receives until the messages seen end with {@code suffix}, for up to 10 s (the writer runs on its own thread). */
    private static List<Message> await(PgWireProtocolTest.Connection c, String suffix) throws InterruptedException {
        List<Message> all = new ArrayList<>();
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!types(all).endsWith(suffix)) {
            assertThat(System.nanoTime()).as("waiting for %s, saw %s", suffix, types(all)).isLessThan(until);
            all.addAll(c.receive());
            Thread.sleep(1);
        }
        return all;
    }

    @Test
    void copyInResponseIsGTextFormatAndAZeroFormatPerColumn() {
        EmbeddedChannel ch = new EmbeddedChannel(BackendMessageEncoder.INSTANCE);
        ch.writeOutbound(new BackendMessage.CopyInResponse(3));
        ByteBuf out = ch.readOutbound();
        byte[] bytes = new byte[out.readableBytes()];
        out.readBytes(bytes);
        out.release();
        assertThat(HexFormat.of().formatHex(bytes)).isEqualTo("47" + "0000000d" + "00" + "0003" + "0000" + "0000" + "0000");
    }

    @Test
    void dataCutAnywhereReachesTheWriterWholeAndTheAnswerIsCopyN() throws Exception {
        for (long seed = 1; seed <= 4; seed++) {
            PgWireProtocolTest.Connection c = connected(seed);
            c.send(new FrontendBytes().query("COPY public.t (a, b) FROM STDIN WITH (FORMAT csv, HEADER)"));
            List<Message> ready = await(c, "G");
            assertThat(ready.get(ready.size() - 1).body()).containsExactly(0, 0, 3, 0, 0, 0, 0, 0, 0);
            c.send(new FrontendBytes().copyData("a,b\n1,".getBytes(StandardCharsets.UTF_8))
                    .copyData("x\n2,ü\n".getBytes(StandardCharsets.UTF_8)).copyDone()
                    .query("CALL BINDING b('{}')"));
            List<Message> done = await(c, "CZTDCZ");
            assertThat(done.get(done.size() - 6).strings()).containsExactly("COPY 3");
            assertThat(writer.loaded).last().isEqualTo("a,b\n1,x\n2,ü\n");
            assertThat(writer.specs).last().isEqualTo(new TableService.CopySpec("t", List.of("a", "b"), true, true, ',', ""));
            c.assertNoLeaks();
        }
    }

    @Test
    void aWriterThatFailsEarlyIsAnsweredAtOnceAndTheRestOfTheDataIsDropped() throws Exception {
        PgWireProtocolTest.Connection c = connected(7);
        c.send(new FrontendBytes().query("COPY t FROM STDIN"));
        await(c, "G");
        c.send(new FrontendBytes().copyData("1\tok\n2\tbad\n".getBytes(StandardCharsets.UTF_8)));
        List<Message> failed = await(c, "EZ");
        assertThat(failed.get(failed.size() - 2).errorFields().get('M')).isEqualTo("line 2, column amount: bad");
        // the client's remaining data and its CopyDone are dropped; the connection serves the next query
        c.send(new FrontendBytes().copyData("3\tmore\n".getBytes(StandardCharsets.UTF_8)).copyDone()
                .query("INSERT INTO t VALUES (1), (2), (3)"));
        List<Message> next = await(c, "CZ");
        assertThat(types(next)).isEqualTo("CZ");
        assertThat(next.get(0).strings()).containsExactly("INSERT 0 3");
        assertThat(writer.inserts).containsExactly(new InsertCommand("t", List.of(), List.of(List.of(text("1")),
                List.of(text("2")), List.of(text("3")))));
    }

    @Test
    void copyFailAndAnUnknownTableAreErrorsAndTheConnectionGoesOn() throws Exception {
        PgWireProtocolTest.Connection c = connected(9);
        c.send(new FrontendBytes().query("COPY t FROM STDIN CSV"));
        await(c, "G");
        c.send(new FrontendBytes().copyData("1,2\n".getBytes(StandardCharsets.UTF_8)).copyFail("user gave up"));
        List<Message> failed = await(c, "EZ");
        assertThat(failed.get(failed.size() - 2).errorFields().get('M')).contains("COPY from stdin failed: user gave up");

        c.send(new FrontendBytes().query("COPY nope FROM STDIN"));
        List<Message> unknown = await(c, "EZ");
        assertThat(types(unknown)).isEqualTo("EZ");
        assertThat(unknown.get(0).errorFields().get('M')).isEqualTo("there is no table nope");
        assertThat(unknown.get(0).errorFields().get('C')).isEqualTo("42P01");
    }

    private static InsertCommand.Value text(String text) {
        return new InsertCommand.Value.Text(text);
    }

    @Test
    void copyInTheExtendedProtocolIsRefusedAndInsertTakesItsParametersAsLiterals() throws Exception {
        PgWireProtocolTest.Connection c = connected(11);
        c.send(new FrontendBytes().parse("", "COPY t FROM STDIN").bind("", "", (short) 0, (short) 0).execute("").sync());
        List<Message> copy = await(c, "Z");
        assertThat(types(copy)).isEqualTo("12EZ");
        assertThat(copy.get(2).errorFields().get('M')).contains("served in a simple query");
        c.send(new FrontendBytes().parse("", "INSERT INTO t VALUES ($1, '$2', $2) -- $1").bindText("", "", "it's", "2")
                .execute("").sync());
        List<Message> insert = await(c, "Z");
        assertThat(types(insert)).isEqualTo("12CZ");
        assertThat(writer.inserts).last().isEqualTo(new InsertCommand("t", List.of(), List.of(List.of(text("it's"),
                text("$2"), text("2")))));
        // binary parameters of the types drivers send that way: int4, float8, bool, NULL
        c.send(new FrontendBytes().parse("", "INSERT INTO t VALUES ($1, $2, $3, $4)", 23, 701, 16, 25)
                .bind("", "", (short) 1, (short) 0, new byte[] {0, 0, 1, 0}, java.nio.ByteBuffer.allocate(8).putDouble(-2.5).array(),
                        new byte[] {1}, null)
                .execute("").sync());
        await(c, "12CZ");
        assertThat(writer.inserts).last().isEqualTo(new InsertCommand("t", List.of(), List.of(List.of(text("256"),
                text("-2.5"), text("true"), InsertCommand.Value.NULL))));
        c.send(new FrontendBytes().parse("", "INSERT INTO t VALUES ($1)", 1700).bind("", "", (short) 1, (short) 0, new byte[] {0, 1})
                .execute("").sync());
        List<Message> numeric = await(c, "Z");
        assertThat(numeric.get(numeric.size() - 2).errorFields().get('M')).contains("send it in text format");
        c.send(new FrontendBytes().parse("", "insert into t values (4)").bind("", "", (short) 0, (short) 0).execute("").sync());
        List<Message> ok = await(c, "Z");
        assertThat(types(ok)).isEqualTo("12CZ");
        assertThat(ok.get(2).strings()).containsExactly("INSERT 0 3");
    }

    @Test
    void tableStatementsGoToTheTableServiceAndAnswerWithItsTag() throws Exception {
        PgWireProtocolTest.Connection c = connected(13);
        c.send(new FrontendBytes().query("create table t (id bigint) partition by hash (id); ALTER TABLE t ADD COLUMN x text"));
        List<Message> done = await(c, "CCZ");
        assertThat(done.get(0).strings()).containsExactly("CREATE TABLE");
        assertThat(done.get(1).strings()).containsExactly("ALTER TABLE");
        assertThat(writer.statements).containsExactly(
                new dev.thresher.bindings.TableCommand.Create(new TableService.TableSpec("t", "id", "id bigint", 16, List.of())),
                new dev.thresher.bindings.TableCommand.Alter("t", new TableService.Change.AddColumn("x text")));
        c.send(new FrontendBytes().query("CREATE INDEX i ON t (x)"));
        List<Message> refused = await(c, "EZ");
        assertThat(refused.get(0).errorFields().get('M')).contains("only CREATE TABLE, ALTER TABLE, DROP TABLE,");
    }
}
