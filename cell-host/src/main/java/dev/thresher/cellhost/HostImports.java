package dev.thresher.cellhost;

/**
 * The {@code "thresher"} import module of guest ABI v1 and of the HTTP handler ABI, independent of the engine that
 * binds it. Pointers and lengths are the guest's i32 values as they arrive (read them as unsigned).
 * A method may throw {@link dev.thresher.errors.ThresherException} to abort the guest at once.
 */
interface HostImports {
    String MODULE = "thresher";

    int emit(int keyPtr, int keyLen, double value);

    void fail(int msgPtr, int msgLen);

    void jsonBeginObject();

    void jsonEndObject();

    void jsonBeginArray();

    void jsonEndArray();

    void jsonKey(int ptr, int len);

    void jsonString(int ptr, int len);

    void jsonNumber(double value);

    void jsonInteger(long value);

    void jsonBool(int value);

    void jsonNull();

    void resultJson(int ptr, int len);

    // ---- HTTP handlers (docs/guest-abi.md, "HTTP handlers"); a module's imports are checked against its kind, so
    // ---- only a handler reaches these, and only a call component reaches the ones above but fail

    void httpStatus(int status);

    void httpHeader(int namePtr, int nameLen, int valuePtr, int valueLen);

    void httpBody(int ptr, int len);

    int call(int descriptorPtr, int descriptorLen, int argsPtr, int argsLen);

    int callResultLen();
}
