package dev.chibifs.cli;

import dev.chibifs.path.Names;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The bytes the command line's arguments were given as. The JVM decodes argv as UTF-8 (the
 * launcher sets LC_ALL=C.UTF-8) and puts U+FFFD for each byte that is not, without a word, so
 * {@code --content $'a\xffb'} stored EF BF BD. The original bytes are in /proc/self/cmdline:
 * its last entries are the arguments, in order.
 */
final class ArgumentBytes {

    private static final Path CMDLINE = Path.of("/proc/self/cmdline");

    private ArgumentBytes() {
    }

    /** Refuses (exit 2) an argument of this process's command line that is not valid UTF-8. */
    static void requireUtf8(List<String> args) {
        if (args.stream().noneMatch(a -> a.indexOf('\uFFFD') >= 0)) {
            return; // nothing was replaced: the common case reads no file
        }
        byte[] cmdline;
        try {
            cmdline = Files.readAllBytes(CMDLINE);
        } catch (IOException | RuntimeException unreadable) {
            return; // no /proc: the JVM's decoding is all there is
        }
        String bad = firstNotUtf8(args, cmdline);
        if (bad != null) {
            throw new UsageException("argument '" + bad + "' is not valid UTF-8 (arguments are taken as UTF-8"
                    + " text; give bytes through standard input)");
        }
    }

    /**
     * The first of {@code args} whose bytes, the matching last entries of {@code cmdline} (NUL
     * separated), are not valid UTF-8, shown escaped ({@link Names}); null when all are, or when the
     * entries do not decode to {@code args} (not this process's arguments: run in-process).
     */
    static String firstNotUtf8(List<String> args, byte[] cmdline) {
        List<byte[]> entries = new ArrayList<>();
        int from = 0;
        for (int i = 0; i < cmdline.length; i++) {
            if (cmdline[i] == 0) {
                entries.add(Arrays.copyOfRange(cmdline, from, i));
                from = i + 1;
            }
        }
        if (from < cmdline.length) {
            entries.add(Arrays.copyOfRange(cmdline, from, cmdline.length));
        }
        if (entries.size() < args.size()) {
            return null;
        }
        List<byte[]> given = entries.subList(entries.size() - args.size(), entries.size());
        for (int i = 0; i < args.size(); i++) {
            if (!new String(given.get(i), StandardCharsets.UTF_8).equals(args.get(i))) {
                return null;
            }
        }
        for (byte[] arg : given) {
            if (!Names.isUtf8(arg)) {
                return Names.shown(arg);
            }
        }
        return null;
    }
}
