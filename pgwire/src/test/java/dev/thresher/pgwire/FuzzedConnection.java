package dev.thresher.pgwire;

import static org.assertj.core.api.Assertions.assertThat;

import dev.thresher.bindings.BindingService;
import dev.thresher.bindings.CallOutcome;
import dev.thresher.bindings.CallOutcomes;
import dev.thresher.bindings.CallResult;
import dev.thresher.bindings.CallService;
import dev.thresher.bindings.JournalColumn;
import dev.thresher.bindings.JournalRows;
import dev.thresher.bindings.JournalService;
import dev.thresher.bindings.TableService;
import dev.thresher.bindings.access.AccessService;
import dev.thresher.errors.Category;
import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import dev.thresher.limits.Limits;
import dev.thresher.pgwire.BackendReader.Message;
import io.netty.buffer.ByteBuf;
import io.netty.buffer.Unpooled;
import io.netty.channel.Channel;
import io.netty.channel.ChannelHandlerContext;
import io.netty.channel.ChannelInboundHandlerAdapter;
import io.netty.channel.ChannelInitializer;
import io.netty.channel.embedded.EmbeddedChannel;
import java.io.InputStream;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.AbstractExecutorService;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.IntConsumer;

/**
 * One connection of the pgwire fuzz tests: the server's own pipeline ({@link PgWireServer#configure}) on an
 * {@link EmbeddedChannel}, in front of services that answer at once and always the same way (a call, a table write,
 * a lookup and a journal query complete on the connection's own thread), so one input always gives one output.
 * {@link #check} holds what must be true whatever a client sent.
 */
final class FuzzedConnection {
    /** The most bytes one connection may answer to one fuzz input: its answers are bounded, not echoes that grow. */
    static final int OUTPUT_BOUND_BYTES = 4 << 20;
    static final String USER = "thresher";
    static final String PASSWORD = "fuzzing-password";
    static final String TENANT = "acme";
    static final UUID KNOWN_CALL = UUID.fromString("0f8e6d2c-1b7a-4c3e-9d5f-2a4b6c8d0e1f");

    private static final Set<Character> BACKEND_TYPES = Set.of('1', '2', '3', 'C', 'D', 'E', 'G', 'I', 'K', 'N', 'R',
            'S', 'T', 'Z', 'n', 's', 't', 'v');

    private static final PgWireConfig TRUST = config(AuthMode.TRUST);
    private static final PgWireConfig SCRAM = config(AuthMode.SCRAM);
    /** Built once: the SCRAM verifier of the one user costs thousands of hash rounds. */
    private static final AccessService TRUST_ACCESS = PgWireServer.staticAccess(TRUST);
    private static final AccessService SCRAM_ACCESS = PgWireServer.staticAccess(SCRAM);

    final EmbeddedChannel channel;
    /** What the decoders handed the connection handler, in order. */
    final List<FrontendMessage> decoded = new ArrayList<>();
    /** What the server sent, one message per buffer it wrote; {@code 'N'} with no body is the refusal of encryption. */
    final List<Message> sent = new ArrayList<>();
    private int sentBytes;

    FuzzedConnection(AuthMode mode) {
        PgWireConfig config = mode == AuthMode.SCRAM ? SCRAM : TRUST;
        AbstractExecutorService inline = new Inline();
        channel = new EmbeddedChannel(new ChannelInitializer<Channel>() {
            @Override
            protected void initChannel(Channel ch) {
                PgWireServer.configure(ch.pipeline(), config, CALLS, new LongAdder(),
                        new PgWireServer.Writes(TABLES, BINDINGS, inline), new PgWireServer.Lookups(OUTCOMES, JOURNAL, inline),
                        mode == AuthMode.SCRAM ? SCRAM_ACCESS : TRUST_ACCESS, new AuthThrottle(), new PgConnections(config.limits()));
                ch.pipeline().addBefore(PgWireServer.HANDLER, "fuzz-decoded", new ChannelInboundHandlerAdapter() {
                    @Override
                    public void channelRead(ChannelHandlerContext ctx, Object msg) {
                        if (msg instanceof FrontendMessage m) {
                            decoded.add(m);
                        }
                        ctx.fireChannelRead(msg);
                    }
                });
            }
        });
    }

    private static PgWireConfig config(AuthMode mode) {
        return new PgWireConfig("127.0.0.1", 0, mode, USER, PASSWORD, TENANT, Limits.DEFAULTS);
    }

    /**
     * Feeds {@code bytes} in pieces of the sizes {@code pieces} gives (cycled), running the connection's tasks after
     * each, until all are fed or the server closed the connection. An exception that escaped the pipeline fails here.
     */
    FuzzedConnection feed(byte[] bytes, int[] pieces) {
        int at = 0;
        for (int i = 0; at < bytes.length && channel.isOpen(); i++) {
            int n = Math.min(bytes.length - at, Math.max(1, pieces[i % pieces.length]));
            channel.writeInbound(Unpooled.wrappedBuffer(Arrays.copyOfRange(bytes, at, at + n)));
            channel.runPendingTasks();
            at += n;
            collect();
        }
        channel.runPendingTasks();
        collect();
        channel.checkException();
        assertThat((Object) channel.readInbound()).as("a message that passed the connection handler").isNull();
        return this;
    }

    FuzzedConnection feed(byte[] bytes) {
        return feed(bytes, new int[] {bytes.length});
    }

    /** Piece sizes from 1 to 16 bytes, the same for the same input. */
    static int[] pieces(byte[] input) {
        Random random = new Random(Arrays.hashCode(input));
        int[] sizes = new int[64];
        for (int i = 0; i < sizes.length; i++) {
            sizes[i] = 1 + random.nextInt(16);
        }
        return sizes;
    }

    private void collect() {
        ByteBuf buf;
        while ((buf = channel.readOutbound()) != null) {
            try {
                sentBytes += buf.readableBytes();
                assertThat(sentBytes).as("bytes the server answered").isLessThan(OUTPUT_BOUND_BYTES);
                sent.add(message(buf));
            } finally {
                buf.release();
            }
        }
    }

    /** One backend message, which must fill its buffer exactly. */
    private static Message message(ByteBuf buf) {
        char type = (char) buf.readUnsignedByte();
        assertThat(BACKEND_TYPES).as("backend message types").contains(type);
        if (!buf.isReadable()) {
            assertThat(type).as("the only message without a length: the refusal of SSL or GSS encryption").isEqualTo('N');
            return new Message(type, new byte[0]);
        }
        int length = buf.readInt();
        assertThat(length).as("length of a '" + type + "' message").isEqualTo(buf.readableBytes() + 4);
        byte[] body = new byte[buf.readableBytes()];
        buf.readBytes(body);
        return new Message(type, body);
    }

    /**
     * What must be true whatever a client sent: every error is typed (never {@code XX000}, the mark of an exception
     * this server did not expect), a FATAL error is the last thing sent and the connection is closed after it, and a
     * closed connection was closed by a FATAL error or by the client's own Terminate or CancelRequest.
     */
    FuzzedConnection check() {
        for (int i = 0; i < sent.size(); i++) {
            Message m = sent.get(i);
            if (m.type() != 'E') {
                continue;
            }
            Map<Character, String> fields = m.errorFields();
            assertThat(fields).containsKeys('S', 'V', 'C', 'M');
            assertThat(fields.get('C')).as("SQLSTATE of " + fields).hasSize(5).isNotEqualTo("XX000");
            assertThat(fields.get('S')).isIn("ERROR", "FATAL");
            if (fields.get('S').equals("FATAL")) {
                assertThat(i).as("a FATAL error is the last message: " + fields).isEqualTo(sent.size() - 1);
                assertThat(channel.isOpen()).as("the connection after a FATAL error").isFalse();
            }
        }
        if (!channel.isOpen()) {
            boolean fatal = !sent.isEmpty() && sent.getLast().type() == 'E'
                    && "FATAL".equals(sent.getLast().errorFields().get('S'));
            boolean askedTo = decoded.stream().anyMatch(m -> m instanceof FrontendMessage.Terminate
                    || m instanceof FrontendMessage.CancelRequest);
            assertThat(fatal || askedTo).as("closed by a FATAL error or by the client; sent "
                    + BackendReader.types(sent)).isTrue();
        }
        return this;
    }

    /** What was sent, with BackendKeyData's made-up process id and key blanked: the same for the same input. */
    List<String> comparable() {
        return sent.stream().map(m -> m.type() + (m.type() == 'K' ? "" : Arrays.toString(m.body()))).toList();
    }

    /** Whether the server started a load (CopyInResponse). */
    boolean sentCopyIn() {
        return sent.stream().anyMatch(m -> m.type() == 'G');
    }

    void close() {
        channel.finishAndReleaseAll();
    }

    /** Runs every task at once, on the calling thread: the event loop's, in these tests. */
    private static final class Inline extends AbstractExecutorService {
        @Override
        public void execute(Runnable command) {
            command.run();
        }

        @Override
        public void shutdown() {
        }

        @Override
        public List<Runnable> shutdownNow() {
            return List.of();
        }

        @Override
        public boolean isShutdown() {
            return false;
        }

        @Override
        public boolean isTerminated() {
            return false;
        }

        @Override
        public boolean awaitTermination(long timeout, TimeUnit unit) {
            return true;
        }
    }

    /**
     * Binding {@code echo} returns its arguments; a binding named like an error code that is not an internal one (any
     * case) fails with it; every other returns a fixed result. Each tells its call id first, as a coordinator does.
     */
    static final CallService CALLS = request -> {
        request.onRecorded().accept(KNOWN_CALL.toString());
        if (request.bindingName().equals("echo")) {
            return CompletableFuture.completedFuture(new CallResult(KNOWN_CALL.toString(), request.argumentsJson()));
        }
        for (ErrorCode code : ErrorCode.values()) {
            if (code.category() != Category.INTERNAL && code.name().equalsIgnoreCase(request.bindingName())) {
                return CompletableFuture.failedFuture(new ThresherException(code, "failed as asked"));
            }
        }
        return CompletableFuture.completedFuture(new CallResult(KNOWN_CALL.toString(), "{\"total\": 42, \"unit\": \"€\"}"));
    };

    /** One known call; any other id is not there. */
    static final CallOutcomes OUTCOMES = (scope, id) -> id.equals(KNOWN_CALL)
            ? Optional.of(new CallOutcome(id, "echo", "succeeded", null, null, "{\"a\":1}",
                    Instant.parse("2025-01-31T09:15:02.500Z"), Instant.parse("2025-01-31T09:15:03.123456Z"),
                    Instant.parse("2025-01-31T09:15:32Z")))
            : Optional.empty();

    /** Up to three rows of made-up values of each column's type; error_code is NULL. */
    static final JournalService JOURNAL = (tenant, select) -> {
        List<List<Object>> rows = new ArrayList<>();
        long count = Math.min(3, select.limit().orElse(3));
        for (int r = 0; r < count; r++) {
            List<Object> row = new ArrayList<>();
            for (JournalColumn c : select.resolvedColumns()) {
                row.add(c.name().equals("error_code") ? null : switch (c.type()) {
                    case UUID -> KNOWN_CALL;
                    case INT4 -> 7 + r;
                    case INT8 -> 8_000_000_000L + r;
                    case TIMESTAMPTZ -> Instant.parse("2025-01-31T09:15:02.123456Z").plusSeconds(r);
                    case TEXT -> c.name() + "-" + r;
                    case JSON -> "{\"a\":" + r + "}";
                });
            }
            rows.add(row);
        }
        return new JournalRows(select.resolvedColumns(), rows, false);
    };

    /**
     * Writes that complete at once. A load is told it may start (the connection answers CopyInResponse and takes the
     * CopyData already received), then fails without reading: nothing here may block the connection's thread.
     */
    static final TableService TABLES = new TableService() {
        @Override
        public long copyFrom(String tenant, String user, CopySpec spec, IntConsumer ready, InputStream data) {
            ready.accept(spec.columns().isEmpty() ? 2 : spec.columns().size());
            throw new ThresherException(ErrorCode.INVALID_ARGUMENTS, "line 1: this table takes no rows");
        }

        @Override
        public long insert(String tenant, String user, dev.thresher.bindings.InsertCommand insert) {
            return 1;
        }

        @Override
        public Loaded load(String tenant, String table, boolean header, InputStream csv) {
            throw refused();
        }

        @Override
        public List<PartitionBatches> readBatches(String tenant, String table, String selector, int abiVersion) {
            throw new UnsupportedOperationException();
        }

        @Override
        public String execute(String tenant, String user, dev.thresher.bindings.TableCommand command) {
            return command.tag();
        }

        @Override
        public TableInfo create(String tenant, TableSpec spec) {
            throw refused();
        }

        @Override
        public List<TableInfo> list(String tenant) {
            return List.of();
        }

        @Override
        public TableInfo show(String tenant, String table) {
            throw refused();
        }

        @Override
        public void drop(String tenant, String table) {
            throw refused();
        }

        @Override
        public TableInfo alter(String tenant, String table, Change change) {
            throw refused();
        }

        @Override
        public TableInfo migrate(String tenant, String table) {
            throw refused();
        }
    };

    static final BindingService BINDINGS = new BindingService() {
        @Override
        public Deployed deploy(String tenant, String deployedBy, byte[] manifest, byte[] module) {
            throw refused();
        }

        @Override
        public Deployed rollback(String tenant, String name, int to, String deployedBy) {
            throw refused();
        }

        @Override
        public List<Version> list(String tenant) {
            return List.of();
        }

        @Override
        public List<Version> history(String tenant, String name) {
            throw refused();
        }

        @Override
        public Optional<String> manifest(String manifestDigest) {
            return Optional.empty();
        }

        @Override
        public String execute(String tenant, String user, dev.thresher.bindings.BindingCommand command) {
            return command.tag();
        }
    };

    private static ThresherException refused() {
        return new ThresherException(ErrorCode.UNSUPPORTED_STATEMENT, "not served in this test");
    }

    /** The bytes of a 3.0 StartupMessage with these parameters. */
    static byte[] startup(Map<String, String> parameters) {
        return new FrontendBytes().startup(parameters).toByteArray();
    }
}
