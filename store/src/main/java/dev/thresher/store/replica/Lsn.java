package dev.thresher.store.replica;

/** WAL positions as PostgreSQL writes them: {@code 16/B374D848}. */
public final class Lsn {
    private Lsn() {}

    public static String format(long lsn) {
        return Long.toHexString(lsn >>> 32).toUpperCase(java.util.Locale.ROOT) + "/"
                + Long.toHexString(lsn & 0xFFFFFFFFL).toUpperCase(java.util.Locale.ROOT);
    }

    /** @throws IllegalArgumentException for anything but {@code X/Y} in hexadecimal */
    public static long parse(String text) {
        int slash = text.indexOf('/');
        if (slash <= 0 || slash == text.length() - 1) {
            throw new IllegalArgumentException("not a WAL position: " + text);
        }
        try {
            long hi = Long.parseLong(text.substring(0, slash), 16);
            long lo = Long.parseLong(text.substring(slash + 1), 16);
            if (hi < 0 || hi > 0xFFFFFFFFL || lo < 0 || lo > 0xFFFFFFFFL) {
                throw new IllegalArgumentException("not a WAL position: " + text);
            }
            return (hi << 32) | lo;
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException("not a WAL position: " + text, e);
        }
    }
}
