package dev.chibifs.cli;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * A file's content as lines split on {@code \n}, kept as byte ranges so a slice of lines can be
 * printed byte for byte (a missing final newline stays missing, a {@code \r} stays).
 */
final class TextLines {

    private final byte[] content;
    // starts[i] is where line i+1 begins; starts[count] is the end of the content
    private final int[] starts;
    private final int count;

    private TextLines(byte[] content, int[] starts, int count) {
        this.content = content;
        this.starts = starts;
        this.count = count;
    }

    static TextLines of(byte[] content) {
        List<Integer> begins = new ArrayList<>();
        begins.add(0);
        for (int i = 0; i < content.length; i++) {
            if (content[i] == '\n' && i + 1 < content.length) {
                begins.add(i + 1);
            }
        }
        int count = content.length == 0 ? 0 : begins.size();
        int[] starts = new int[count + 1];
        for (int i = 0; i < count; i++) {
            starts[i] = begins.get(i);
        }
        starts[count] = content.length;
        return new TextLines(content, starts, count);
    }

    /** The number of lines; a final line without a newline counts. */
    int count() {
        return count;
    }

    /** Line {@code n} (1-based) without its newline, decoded as UTF-8 (invalid bytes become U+FFFD). */
    String text(int n) {
        int from = starts[n - 1];
        int to = starts[n];
        if (to > from && content[to - 1] == '\n') {
            to--;
        }
        return new String(content, from, to - from, StandardCharsets.UTF_8);
    }

    /** Writes lines {@code first..last} (1-based, inclusive) exactly as they are in the file. */
    void write(OutputStream out, int first, int last) throws IOException {
        if (first <= last) {
            out.write(content, starts[first - 1], starts[last] - starts[first - 1]);
        }
    }
}
