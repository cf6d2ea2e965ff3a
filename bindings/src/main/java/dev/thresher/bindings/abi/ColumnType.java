package dev.thresher.bindings.abi;

/**
 * The column types of a row batch, each with its stable one-byte wire tag (guest ABI v1).
 * Tags are never reused or renumbered; a new type gets a new tag.
 */
public enum ColumnType {
    /** 8-byte little-endian two's complement per row. */
    INT64(1),
    /** 8-byte little-endian IEEE 754 binary64 per row; bit patterns travel exactly. */
    FLOAT64(2),
    /** UTF-8 bytes, addressed by a u32 offset table. */
    TEXT(3),
    /** One byte per row, 0 or 1. */
    BOOL(4),
    /** Opaque bytes, addressed by a u32 offset table. */
    BYTES(5);

    private final int tag;

    ColumnType(int tag) {
        this.tag = tag;
    }

    /** The wire tag, 1..255. */
    public int tag() {
        return tag;
    }

    /** True for the types laid out as an offset table plus bytes. */
    public boolean variableWidth() {
        return this == TEXT || this == BYTES;
    }

    /**
     * The type with this wire tag.
     *
     * @throws IllegalArgumentException for a tag ABI v1 does not define
     */
    public static ColumnType ofTag(int tag) {
        return switch (tag) {
            case 1 -> INT64;
            case 2 -> FLOAT64;
            case 3 -> TEXT;
            case 4 -> BOOL;
            case 5 -> BYTES;
            default -> throw new IllegalArgumentException("unknown column type tag " + tag);
        };
    }
}
