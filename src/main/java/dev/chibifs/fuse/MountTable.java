package dev.chibifs.fuse;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** This host's mounts as the kernel lists them in {@code /proc/self/mountinfo}. */
public final class MountTable {

    /** One mount: where, what type ({@code fuse.chibifs} for ours) and from what source. */
    public record MountEntry(Path mountpoint, String fsType, String source) {
        /** True for a chibifs mount. */
        public boolean isChibifs() {
            return fsType.equals("fuse.chibifs") || (fsType.startsWith("fuse") && source.equals("chibifs"));
        }
    }

    private static final Path MOUNTINFO = Path.of("/proc/self/mountinfo");

    private MountTable() {
    }

    /** Every mount listed now. */
    public static List<MountEntry> all() throws IOException {
        List<MountEntry> out = new ArrayList<>();
        for (String line : Files.readAllLines(MOUNTINFO)) {
            // id parent major:minor root mountpoint options [optional fields...] - fstype source superopts
            String[] f = line.split(" ");
            int dash = line.indexOf(" - ");
            if (f.length < 5 || dash < 0) {
                continue;
            }
            String[] tail = line.substring(dash + 3).split(" ");
            out.add(new MountEntry(Path.of(unescape(f[4])), tail[0], tail.length > 1 ? unescape(tail[1]) : ""));
        }
        return out;
    }

    /** The topmost mount at exactly {@code mountpoint}, if any. */
    public static Optional<MountEntry> find(Path mountpoint) throws IOException {
        Path want = mountpoint.toAbsolutePath().normalize();
        MountEntry found = null;
        for (MountEntry e : all()) {
            if (e.mountpoint().equals(want)) {
                found = e; // later lines are mounted on top of earlier ones
            }
        }
        return Optional.ofNullable(found);
    }

    /** mountinfo escapes space, tab, newline and backslash as octal ({@code \040}). */
    static String unescape(String s) {
        if (s.indexOf('\\') < 0) {
            return s;
        }
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\\' && i + 4 <= s.length() && s.substring(i + 1, i + 4).matches("[0-7]{3}")) {
                b.append((char) Integer.parseInt(s.substring(i + 1, i + 4), 8));
                i += 3;
            } else {
                b.append(c);
            }
        }
        return b.toString();
    }
}
