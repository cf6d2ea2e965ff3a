package dev.thresher.bindings.access;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Arrays;
import java.util.Base64;
import java.util.List;
import java.util.Objects;

/**
 * The server's side of one SCRAM-SHA-256 authentication (RFC 5802, RFC 7677, with PostgreSQL's rules): the client's
 * first message, the server's first, the client's final with its proof, the server's final with its signature.
 *
 * <p>Channel binding ({@code SCRAM-SHA-256-PLUS}, {@code tls-server-end-point}, RFC 5929) is offered when the
 * connection is TLS ({@code channelBinding} is the hash of the server's certificate). A client that says it supports
 * channel binding but thinks the server does not ({@code y}) while the server offered it is refused: someone in the
 * middle stripped the offer.
 *
 * <p>An unknown user runs the same exchange against a mock verifier (a salt derived from the name and a per-node
 * secret, so asking twice answers the same) and fails at the proof, exactly as a wrong password does: a client learns
 * nothing about which users exist.
 *
 * <p>Failures are {@link ThresherException}s: {@link ErrorCode#PROTOCOL_VIOLATION} for a malformed message,
 * {@link ErrorCode#AUTHENTICATION_FAILED} for everything else (a wrong proof, an unknown user, a channel binding
 * that does not match); their messages never echo the client's bytes.
 */
public final class ScramExchange {
    public static final String MECHANISM = "SCRAM-SHA-256";
    public static final String MECHANISM_PLUS = "SCRAM-SHA-256-PLUS";
    static final String CHANNEL_BINDING_TYPE = "tls-server-end-point";
    private static final int NONCE_BYTES = 18;

    private enum State { FIRST, FINAL, DONE }

    private final Scram.Verifier verifier;
    private final boolean known;
    private final byte[] channelBinding;
    private State state = State.FIRST;
    private String gs2Header;
    private boolean plus;
    private String clientFirstBare;
    private String serverFirst;
    private String nonce;

    /**
     * @param verifier the user's verifier; for an unknown user, {@link #mockVerifier}
     * @param known whether the user exists (an unknown user always fails at the proof)
     * @param channelBinding the connection's {@code tls-server-end-point} data, or null when it is not TLS
     */
    public ScramExchange(Scram.Verifier verifier, boolean known, byte[] channelBinding) {
        this.verifier = Objects.requireNonNull(verifier, "verifier");
        this.known = known;
        this.channelBinding = channelBinding == null ? null : channelBinding.clone();
    }

    /** The mechanisms offered: with {@code -PLUS} first when the connection can bind to its TLS channel. */
    public static List<String> mechanisms(boolean tls) {
        return tls ? List.of(MECHANISM_PLUS, MECHANISM) : List.of(MECHANISM);
    }

    /**
     * A verifier for a user that does not exist: stable for a name on one node (a client asking twice sees the same
     * salt, as for a real user), never matching any password.
     */
    public static Scram.Verifier mockVerifier(String user, byte[] nodeSecret) {
        byte[] digest = Scram.hmac(nodeSecret, "mock:" + user);
        byte[] keys = Scram.sha256(digest);
        return new Scram.Verifier(Scram.DEFAULT_ITERATIONS, Arrays.copyOf(digest, Scram.SALT_BYTES), keys,
                Scram.hmac(keys, "server"));
    }

    /**
     * The client's first message under the mechanism it chose; answers the server's first message.
     */
    public byte[] first(String mechanism, byte[] clientFirst) {
        if (state != State.FIRST) {
            throw malformed("unexpected SASL initial response");
        }
        state = State.FINAL;
        if (MECHANISM_PLUS.equals(mechanism)) {
            if (channelBinding == null) {
                throw failed("SCRAM-SHA-256-PLUS needs a TLS connection");
            }
            plus = true;
        } else if (!MECHANISM.equals(mechanism)) {
            throw failed("client selected an invalid SASL authentication mechanism");
        }
        String message = text(clientFirst);
        // gs2-header: cbind-flag "," [authzid] ","
        int comma = message.indexOf(',');
        if (comma < 0) {
            throw malformed("malformed SCRAM message: no GS2 header");
        }
        String flag = message.substring(0, comma);
        if (flag.startsWith("p=")) {
            if (!plus) {
                throw failed("channel binding requested but the client selected " + MECHANISM);
            }
            if (!flag.substring(2).equals(CHANNEL_BINDING_TYPE)) {
                throw failed("unsupported SCRAM channel-binding type (tls-server-end-point is supported)");
            }
        } else if (flag.equals("y")) {
            if (plus) {
                throw malformed("malformed SCRAM message: 'y' flag with " + MECHANISM_PLUS);
            }
            if (channelBinding != null) {
                // the client supports channel binding and believes this server does not: the offer was stripped
                throw failed("SCRAM channel binding negotiation error: the server offered channel binding");
            }
        } else if (flag.equals("n")) {
            if (plus) {
                throw malformed("malformed SCRAM message: 'n' flag with " + MECHANISM_PLUS);
            }
        } else {
            throw malformed("malformed SCRAM message: unexpected channel-binding flag");
        }
        int second = message.indexOf(',', comma + 1);
        if (second < 0) {
            throw malformed("malformed SCRAM message: no authorization identity field");
        }
        if (second != comma + 1) {
            throw failed("client uses authorization identity, but it is not supported");
        }
        gs2Header = message.substring(0, second + 1);
        clientFirstBare = message.substring(second + 1);
        String[] attributes = clientFirstBare.split(",", -1);
        if (attributes.length < 2 || attributes[0].startsWith("m=")) {
            throw malformed("malformed SCRAM message: unsupported mandatory extension or missing attributes");
        }
        // the user name in the message is ignored, as PostgreSQL does: the startup message's user is authenticated
        if (!attributes[0].startsWith("n=") || !attributes[1].startsWith("r=") || attributes[1].length() == 2) {
            throw malformed("malformed SCRAM message: expected n= and r= attributes");
        }
        String clientNonce = attributes[1].substring(2);
        for (int i = 0; i < clientNonce.length(); i++) {
            char c = clientNonce.charAt(i);
            if (c < 0x21 || c > 0x7e || c == ',') {
                throw malformed("malformed SCRAM message: invalid nonce");
            }
        }
        nonce = clientNonce + Scram.nonce(NONCE_BYTES);
        serverFirst = "r=" + nonce + ",s=" + Base64.getEncoder().encodeToString(verifier.salt()) + ",i="
                + verifier.iterations();
        return serverFirst.getBytes(StandardCharsets.US_ASCII);
    }

    /**
     * The client's final message with its proof; answers the server's final message (its signature) when the
     * proof holds.
     *
     * @throws ThresherException {@link ErrorCode#AUTHENTICATION_FAILED} when it does not
     */
    public byte[] last(byte[] clientFinal) {
        if (state != State.FINAL) {
            throw malformed("unexpected SASL response");
        }
        state = State.DONE;
        String message = text(clientFinal);
        int proofAt = message.lastIndexOf(",p=");
        if (proofAt < 0) {
            throw malformed("malformed SCRAM message: no proof");
        }
        String withoutProof = message.substring(0, proofAt);
        String[] attributes = withoutProof.split(",", -1);
        if (attributes.length < 2 || !attributes[0].startsWith("c=") || !attributes[1].startsWith("r=")) {
            throw malformed("malformed SCRAM message: expected c= and r= attributes");
        }
        byte[] binding = decode(attributes[0].substring(2));
        byte[] header = gs2Header.getBytes(StandardCharsets.US_ASCII);
        byte[] expected = plus ? concat(header, channelBinding) : header;
        if (!MessageDigest.isEqual(binding, expected)) {
            throw failed("SCRAM channel binding check failed");
        }
        if (!attributes[1].substring(2).equals(nonce)) {
            throw malformed("malformed SCRAM message: nonce does not match");
        }
        byte[] proof = decode(message.substring(proofAt + 3));
        if (proof.length != 32) {
            throw malformed("malformed SCRAM message: malformed proof");
        }
        byte[] authMessage = (clientFirstBare + "," + serverFirst + "," + withoutProof).getBytes(StandardCharsets.UTF_8);
        byte[] clientSignature = Scram.hmac(verifier.storedKey(), authMessage);
        byte[] clientKey = new byte[32];
        for (int i = 0; i < 32; i++) {
            clientKey[i] = (byte) (proof[i] ^ clientSignature[i]);
        }
        boolean ok = MessageDigest.isEqual(Scram.sha256(clientKey), verifier.storedKey());
        if (!ok || !known) {
            throw new ThresherException(ErrorCode.AUTHENTICATION_FAILED, "password authentication failed");
        }
        byte[] serverSignature = Scram.hmac(verifier.serverKey(), authMessage);
        return ("v=" + Base64.getEncoder().encodeToString(serverSignature)).getBytes(StandardCharsets.US_ASCII);
    }

    /** Whether the exchange authenticated over channel binding. */
    public boolean channelBound() {
        return plus;
    }

    private static String text(byte[] bytes) {
        for (byte b : bytes) {
            if (b == 0) {
                throw malformed("malformed SCRAM message: NUL byte");
            }
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    private static byte[] decode(String b64) {
        try {
            return Base64.getDecoder().decode(b64);
        } catch (IllegalArgumentException e) {
            throw malformed("malformed SCRAM message: invalid base64");
        }
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] out = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, out, a.length, b.length);
        return out;
    }

    private static ThresherException malformed(String message) {
        return new ThresherException(ErrorCode.PROTOCOL_VIOLATION, message);
    }

    private static ThresherException failed(String message) {
        return new ThresherException(ErrorCode.AUTHENTICATION_FAILED, message);
    }
}
