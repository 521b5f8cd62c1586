package dev.chibifs.cli;

import dev.chibifs.path.VfsPath;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/** Prints a range of a file's lines for head, tail and lines: the bytes as they are, or JSON. */
final class LineSlice {

    record Line(int number, String text) {
    }

    record Lines(String uri, int total, List<Line> lines) {
    }

    private LineSlice() {
    }

    /**
     * Prints lines {@code first..last} (1-based, inclusive; empty when {@code first > last}; a
     * {@code last} past the end stops there, without counting the lines first).
     */
    static void print(VfsCommand command, VfsPath path, TextLines lines, int first, int last, boolean json)
            throws IOException {
        if (!json) {
            lines.write(command.out(), first, last);
            return;
        }
        List<Line> out = new ArrayList<>();
        for (int n = first, end = Math.min(last, lines.count()); n <= end; n++) {
            out.add(new Line(n, lines.text(n)));
        }
        command.printJson(new Lines(path.toUri(), lines.count(), out));
    }
}
