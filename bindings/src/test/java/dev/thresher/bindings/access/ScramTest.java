package dev.thresher.bindings.access;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.thresher.errors.ErrorCode;
import dev.thresher.errors.ThresherException;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import org.junit.jupiter.api.Test;

class ScramTest {
    private static final Base64.Decoder B64 = Base64.getDecoder();

    /** RFC 7677, section 3: user "user", password "pencil". */
    private static final String SALT = "W22ZaJ0SNY7soEsUEjb6gQ==";
    private static final String CLIENT_FIRST_BARE = "n=user,r=rOprNGfwEbeRWgbNEkqO";
    private static final String SERVER_FIRST = "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=" + SALT + ",i=4096";
    private static final String CLIENT_FINAL_WITHOUT_PROOF = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
    private static final String PROOF = "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=";
    private static final String SERVER_SIGNATURE = "6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=";

    @Test
    void theVerifierOfRfc7677ChecksItsProofAndSignsAsTheRfcSays() {
        Scram.Verifier v = Scram.verifier("pencil", B64.decode(SALT), 4096);
        byte[] auth = (CLIENT_FIRST_BARE + "," + SERVER_FIRST + "," + CLIENT_FINAL_WITHOUT_PROOF)
                .getBytes(StandardCharsets.UTF_8);
        byte[] signature = Scram.hmac(v.storedKey(), auth);
        byte[] proof = B64.decode(PROOF);
        byte[] clientKey = new byte[32];
        for (int i = 0; i < 32; i++) {
            clientKey[i] = (byte) (proof[i] ^ signature[i]);
        }
        assertThat(Scram.sha256(clientKey)).isEqualTo(v.storedKey());
        assertThat(Base64.getEncoder().encodeToString(Scram.hmac(v.serverKey(), auth))).isEqualTo(SERVER_SIGNATURE);
        assertThat(Scram.matches(v, "pencil")).isTrue();
        assertThat(Scram.matches(v, "pencil ")).isFalse();
    }

    @Test
    void verifiersRoundTripThroughPostgresqlsTextForm() {
        Scram.Verifier v = Scram.verifier("correct horse");
        assertThat(v.text()).startsWith("SCRAM-SHA-256$4096:");
        assertThat(Scram.Verifier.parse(v.text())).isEqualTo(v);
        assertThat(v.toString()).doesNotContain(Base64.getEncoder().encodeToString(v.storedKey()));
        assertThatThrownBy(() -> Scram.Verifier.parse("md5abc")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> Scram.Verifier.parse("SCRAM-SHA-256$10:c2FsdA==$AAAA:AAAA"))
                .isInstanceOf(IllegalArgumentException.class);
    }

    /**
     * Verifiers computed by PostgreSQL itself, not by this class: PostgreSQL 15.18 (Debian 15.18-0+deb12u1), a fresh
     * cluster, {@code SET password_encryption = 'scram-sha-256'; CREATE ROLE v LOGIN PASSWORD ...;} and
     * {@code SELECT rolpassword FROM pg_authid WHERE rolname = 'v'} (the salt is PostgreSQL's random one, kept here).
     * The second password is {@code U&'\2168 pass\00A0word'}, which PostgreSQL's SASLprep turns into "IX pass word".
     */
    private static final String POSTGRES_PENCIL =
            "SCRAM-SHA-256$4096:xe8NpS6Gwjj7sH4tMo//YA==$IFMLNVArl2oHKjCfR4RAhNXu5Pj1UBNso0/xXaMIfSs=:EmCKlcBWo8govc+DyTm8Id8mejuq+1+5FMXsE8fVWnA=";
    private static final String POSTGRES_NON_ASCII =
            "SCRAM-SHA-256$4096:e1tYReqRPZtrTRhu5EEUew==$xqIjXbHwb78uZSN9PhsjIzQaRQvuXlE4UzWtvyGDUlg=:KI1jRmGykyz7h2WOrOaaCJzKzt534VDx/l0fmtsVRN8=";

    @Test
    void verifiersComputedByPostgresqlAreTheOnesThisClassComputesFromTheirSalt() {
        Scram.Verifier pencil = Scram.Verifier.parse(POSTGRES_PENCIL);
        assertThat(pencil.iterations()).isEqualTo(4096);
        assertThat(Scram.verifier("pencil", pencil.salt(), 4096).text()).isEqualTo(POSTGRES_PENCIL);
        assertThat(Scram.matches(pencil, "pencil")).isTrue();
        assertThat(Scram.matches(pencil, "Pencil")).isFalse();

        Scram.Verifier nonAscii = Scram.Verifier.parse(POSTGRES_NON_ASCII);
        assertThat(Scram.verifier("\u2168 pass\u00a0word", nonAscii.salt(), 4096).text()).isEqualTo(POSTGRES_NON_ASCII);
        assertThat(Scram.matches(nonAscii, "IX pass word")).isTrue();
        assertThat(Scram.matches(nonAscii, "IX password")).isFalse();
    }

    @Test
    void nonAsciiPasswordsAreNormalizedAsSaslprepDoes() {
        // U+2168 ROMAN NUMERAL NINE is "IX" after NFKC; a no-break space is a space; a soft hyphen is nothing
        Scram.Verifier v = Scram.verifier("I\u00adX pass\u00a0word", B64.decode(SALT), 4096);
        assertThat(Scram.matches(v, "\u2168 pass word")).isTrue();
    }

    @Test
    void aPasswordSaslprepRefusesIsHashedAsItIsAsLibpqDoes() {
        byte[] utf8 = "\ue000\uff50".getBytes(StandardCharsets.UTF_8);
        assertThat(Saslprep.prepare("\ue000\uff50")).as("private use (C.3)").isEqualTo(utf8);
        assertThat(Saslprep.prepare("\ud83d\ude00\uff50")).as("unassigned in Unicode 3.2 (A.1)")
                .isEqualTo("\ud83d\ude00\uff50".getBytes(StandardCharsets.UTF_8));
        assertThat(Saslprep.prepare("\u05d0\uff42\u05d0")).as("RandALCat with LCat")
                .isEqualTo("\u05d0\uff42\u05d0".getBytes(StandardCharsets.UTF_8));
        assertThat(new String(Saslprep.prepare("\u05d0\u05d1"), StandardCharsets.UTF_8)).isEqualTo("\u05d0\u05d1");
        assertThat(new String(Saslprep.prepare("\uff50a\u2000b\u00adc"), StandardCharsets.UTF_8)).isEqualTo("pa bc");
        assertThat(Saslprep.in(new int[] {0x10, 0x20, 0x40, 0x40}, 0x40)).isTrue();
        assertThat(Saslprep.in(new int[] {0x10, 0x20, 0x40, 0x40}, 0x21)).isFalse();
    }

    /** A full exchange, the client's side computed here as RFC 5802 says. */
    @Test
    void anExchangeWithTheRightPasswordSucceedsAndTheServerSignatureProvesTheServerKnowsTheVerifier() {
        Scram.Verifier v = Scram.verifier("s3cret-pass");
        ScramExchange server = new ScramExchange(v, true, null);
        Client client = new Client("s3cret-pass", "n,,");
        String serverFirst = new String(server.first(ScramExchange.MECHANISM, client.first()), StandardCharsets.UTF_8);
        String serverFinal = new String(server.last(client.last(serverFirst)), StandardCharsets.UTF_8);
        assertThat(serverFinal).isEqualTo("v=" + client.expectedServerSignature());
    }

    @Test
    void aWrongPasswordAndAnUnknownUserFailAlike() {
        Scram.Verifier v = Scram.verifier("s3cret-pass");
        ScramExchange wrong = new ScramExchange(v, true, null);
        Client client = new Client("not-the-pass", "n,,");
        String first = new String(wrong.first(ScramExchange.MECHANISM, client.first()), StandardCharsets.UTF_8);
        assertThatThrownBy(() -> wrong.last(client.last(first)))
                .isInstanceOf(ThresherException.class).extracting(e -> ((ThresherException) e).code())
                .isEqualTo(ErrorCode.AUTHENTICATION_FAILED);

        byte[] secret = new byte[32];
        Scram.Verifier mock = ScramExchange.mockVerifier("nobody", secret);
        assertThat(ScramExchange.mockVerifier("nobody", secret)).isEqualTo(mock); // the same salt each time
        ScramExchange unknown = new ScramExchange(mock, false, null);
        Client guess = new Client("anything", "n,,");
        String f = new String(unknown.first(ScramExchange.MECHANISM, guess.first()), StandardCharsets.UTF_8);
        assertThatThrownBy(() -> unknown.last(guess.last(f))).isInstanceOf(ThresherException.class)
                .hasMessage("password authentication failed");
    }

    @Test
    void channelBindingMustMatchAndCannotBeStrippedByAManInTheMiddle() {
        Scram.Verifier v = Scram.verifier("s3cret-pass");
        byte[] endPoint = new byte[32];
        endPoint[0] = 7;
        ScramExchange bound = new ScramExchange(v, true, endPoint);
        assertThat(ScramExchange.mechanisms(true)).containsExactly(ScramExchange.MECHANISM_PLUS, ScramExchange.MECHANISM);
        Client plus = new Client("s3cret-pass", "p=tls-server-end-point,,").binding(endPoint);
        String first = new String(bound.first(ScramExchange.MECHANISM_PLUS, plus.first()), StandardCharsets.UTF_8);
        assertThat(new String(bound.last(plus.last(first)), StandardCharsets.UTF_8)).startsWith("v=");
        assertThat(bound.channelBound()).isTrue();

        // the client saw a certificate with another end point (someone in the middle terminated TLS)
        ScramExchange other = new ScramExchange(v, true, endPoint);
        Client fooled = new Client("s3cret-pass", "p=tls-server-end-point,,").binding(new byte[32]);
        String f = new String(other.first(ScramExchange.MECHANISM_PLUS, fooled.first()), StandardCharsets.UTF_8);
        assertThatThrownBy(() -> other.last(fooled.last(f))).isInstanceOf(ThresherException.class)
                .hasMessageContaining("channel binding");

        // "y": the client can bind but was told the server cannot, while the server offered it
        ScramExchange stripped = new ScramExchange(v, true, endPoint);
        assertThatThrownBy(() -> stripped.first(ScramExchange.MECHANISM, new Client("s3cret-pass", "y,,").first()))
                .isInstanceOf(ThresherException.class).hasMessageContaining("negotiation");
        // -PLUS without TLS
        assertThatThrownBy(() -> new ScramExchange(v, true, null).first(ScramExchange.MECHANISM_PLUS, plus.first()))
                .isInstanceOf(ThresherException.class);
    }

    @Test
    void malformedMessagesAreProtocolViolationsThatEchoNothing() {
        ScramExchange s = new ScramExchange(Scram.verifier("s3cret-pass"), true, null);
        assertThatThrownBy(() -> s.first(ScramExchange.MECHANISM, "garbage\u0001secret".getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(ThresherException.class)
                .satisfies(e -> assertThat(((ThresherException) e).code()).isEqualTo(ErrorCode.PROTOCOL_VIOLATION))
                .satisfies(e -> assertThat(e.getMessage()).doesNotContain("secret"));
        ScramExchange authzid = new ScramExchange(Scram.verifier("s3cret-pass"), true, null);
        assertThatThrownBy(() -> authzid.first(ScramExchange.MECHANISM, "n,a=admin,n=,r=abc".getBytes(StandardCharsets.UTF_8)))
                .isInstanceOf(ThresherException.class).hasMessageContaining("authorization identity");
    }

    /** RFC 5802's client, enough to drive the server. */
    private static final class Client {
        private final String password;
        private final String gs2;
        private byte[] cbind = new byte[0];
        private final String nonce = "fyko+d2lbbFgONRv9qkxdawL";
        private String authMessage;
        private byte[] salted;

        Client(String password, String gs2) {
            this.password = password;
            this.gs2 = gs2;
        }

        Client binding(byte[] data) {
            cbind = data;
            return this;
        }

        byte[] first() {
            return (gs2 + "n=,r=" + nonce).getBytes(StandardCharsets.UTF_8);
        }

        byte[] last(String serverFirst) {
            String[] parts = serverFirst.split(",");
            String fullNonce = parts[0].substring(2);
            byte[] salt = B64.decode(parts[1].substring(2));
            int iterations = Integer.parseInt(parts[2].substring(2));
            salted = Scram.saltedPassword(Scram.normalize(password), salt, iterations);
            byte[] header = gs2.getBytes(StandardCharsets.UTF_8);
            byte[] c = new byte[header.length + cbind.length];
            System.arraycopy(header, 0, c, 0, header.length);
            System.arraycopy(cbind, 0, c, header.length, cbind.length);
            String withoutProof = "c=" + Base64.getEncoder().encodeToString(c) + ",r=" + fullNonce;
            authMessage = "n=,r=" + nonce + "," + serverFirst + "," + withoutProof;
            byte[] clientKey = Scram.hmac(salted, "Client Key");
            byte[] signature = Scram.hmac(Scram.sha256(clientKey), authMessage.getBytes(StandardCharsets.UTF_8));
            byte[] proof = new byte[32];
            for (int i = 0; i < 32; i++) {
                proof[i] = (byte) (clientKey[i] ^ signature[i]);
            }
            return (withoutProof + ",p=" + Base64.getEncoder().encodeToString(proof)).getBytes(StandardCharsets.UTF_8);
        }

        String expectedServerSignature() {
            return Base64.getEncoder().encodeToString(Scram.hmac(Scram.hmac(salted, "Server Key"),
                    authMessage.getBytes(StandardCharsets.UTF_8)));
        }
    }
}
