package dev.thresher.cellhost;

/**
 * The {@code "thresher"} import module of guest ABI v1, independent of the engine that binds it.
 * Pointers and lengths are the guest's i32 values as they arrive (read them as unsigned).
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
}
