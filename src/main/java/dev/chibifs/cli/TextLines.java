package dev.chibifs.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;

/**
 * A file's lines, split on {@code \n}, read from the store file in chunks as they are asked for,
 * so head, tail and lines take the same memory for a file of any size. A slice is printed byte for
 * byte (a missing final newline stays missing, a {@code \r} stays). Lines are asked for in rising
 * order; the count is one more pass over the file.
 */
final class TextLines {

    private final StoreFile file;
    private int count = -1;
    // the line numbered cursorNumber (1-based) is cursor, null past the end
    private int cursorNumber = 1;
    private StoreFile.Line cursor;

    private TextLines(StoreFile file) throws IOException {
        this.file = file;
        this.cursor = file.line(0);
    }

    static TextLines of(StoreFile file) throws IOException {
        return new TextLines(file);
    }

    /** The number of lines; a final line without a newline counts. */
    int count() throws IOException {
        if (count < 0) {
            count = file.count(0);
        }
        return count;
    }

    /** Line {@code n} (1-based, at least the last asked for), or null past the end. */
    private StoreFile.Line line(int n) throws IOException {
        if (n < cursorNumber) {
            cursorNumber = 1;
            cursor = file.line(0);
        }
        while (cursor != null && cursorNumber < n) {
            cursor = file.line(cursor.next());
            cursorNumber++;
        }
        return cursor;
    }

    /** Line {@code n} (1-based) without its newline, decoded as UTF-8 (invalid bytes become U+FFFD). */
    String text(int n) throws IOException {
        StoreFile.Line l = line(n);
        return l == null ? "" : new String(file.bytes(l), StandardCharsets.UTF_8);
    }

    /** Writes lines {@code first..last} (1-based, inclusive) exactly as they are in the file. */
    void write(OutputStream out, int first, int last) throws IOException {
        if (first > last) {
            return;
        }
        StoreFile.Line from = line(first);
        if (from == null) {
            return;
        }
        long start = from.start();
        StoreFile.Line to = line(last);
        file.copy(start, to == null ? Long.MAX_VALUE : to.next(), out);
    }
}
