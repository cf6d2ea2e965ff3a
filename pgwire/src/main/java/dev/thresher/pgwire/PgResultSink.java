package dev.thresher.pgwire;

/**
 * Where the answer to one statement goes, whichever protocol asked for it: a simple query's statement (its rows
 * after their RowDescription, in text, all of them; done, the script goes on; failed, the query ends) or a portal's
 * Execute (no RowDescription, Describe sends it; the portal's result format; at most the Execute's row count; failed,
 * everything up to Sync is discarded). Touched on the connection's event loop only.
 */
interface PgResultSink {
    /** Whether a RowDescription precedes the rows (a simple query's; in the extended protocol Describe sends it). */
    boolean describes();

    /** The result format of the rows, 0 text or 1 binary. */
    short format();

    /** At most this many rows, when positive; the rest are left for the portal's next Execute. */
    int maxRows();

    /** A message of the answer: RowDescription, DataRow, CommandComplete, EmptyQueryResponse, a notice. */
    void write(BackendMessage message);

    /** The statement was answered after its work left the event loop; what follows it runs now. */
    void done();

    /** The statement failed: its error is reported. */
    void failed(PgError error);
}
