package dev.chibifs.store.s3;

import dev.chibifs.sys.Errors;
import dev.chibifs.sys.Linux;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Consumer;
import java.util.zip.CRC32;

/**
 * The local layer's journal: one JSON record a line, each behind the CRC-32 of its text, appended as
 * the overlay changes and rewritten whole (compacted) at open and close. A line whose checksum or
 * JSON is wrong (a torn last line after a crash, a disk error) is reported and skipped, never applied.
 *
 * <p>Appends are written, not forced: a daemon killed with -9 loses nothing the kernel already has;
 * an fsync, which promises more, syncs it through {@link #toForce}.
 */
final class Journal implements Closeable {

    static final ObjectMapper JSON = new ObjectMapper();

    private final Path file;
    private CacheFile out;
    /** Where the next record goes: a record torn by a failed write (ENOSPC) is written over. */
    private long end;
    private long appended;
    /**
     * Up to where the file's blocks are allocated ahead of its end ({@link #ensureRoom}); Long.MAX_VALUE
     * where the cache's file system cannot allocate ahead, and room is then hoped for, as before.
     */
    private long allocatedTo;

    Journal(Path file) {
        this.file = file;
    }

    /** The valid records of the journal in order; each bad line is told to {@code report}. */
    List<ObjectNode> read(Consumer<String> report) throws IOException {
        List<ObjectNode> records = new ArrayList<>();
        if (!Files.exists(file)) {
            return records;
        }
        int lineNo = 0;
        for (String line : Files.readAllLines(file, StandardCharsets.UTF_8)) {
            lineNo++;
            if (line.isEmpty()) {
                continue;
            }
            int space = line.indexOf(' ');
            String why = null;
            if (space != 8) {
                why = "no checksum";
            } else {
                String text = line.substring(space + 1);
                if (!line.substring(0, 8).equals(crc(text))) {
                    why = "checksum mismatch";
                } else {
                    try {
                        if (JSON.readTree(text) instanceof ObjectNode o && o.hasNonNull("t") && o.hasNonNull("p")) {
                            records.add(o);
                        } else {
                            why = "not a record";
                        }
                    } catch (JsonProcessingException e) {
                        why = "bad JSON";
                    }
                }
            }
            if (why != null) {
                report.accept(file + " line " + lineNo + ": " + why + ", skipped");
            }
        }
        return records;
    }

    /** Appends one record. */
    void append(ObjectNode record) throws IOException {
        openOut();
        end += out.write(ByteBuffer.wrap(line(record)), end);
        appended++;
    }

    private void openOut() throws IOException {
        if (out == null) {
            out = CacheFile.openOrCreate(file);
            end = out.size();
            allocatedTo = end;
        }
    }

    /**
     * Makes sure the next records have room on the disk, before an operation changes the overlay: an
     * operation whose record could not be written would be refused (ENOSPC) and yet made, since the
     * overlay holds it and uploads it. Blocks are allocated {@link #ROOM} ahead of the end, so a
     * full disk refuses the operation here, while nothing has changed.
     */
    void ensureRoom() throws IOException {
        openOut();
        if (allocatedTo - end >= LOW_ROOM) {
            return;
        }
        try {
            out.reserve(end, ROOM);
            allocatedTo = end + ROOM;
        } catch (IOException e) {
            if (Errors.errno(e) != Linux.EOPNOTSUPP) {
                throw e;
            }
            allocatedTo = Long.MAX_VALUE; // a file system that cannot allocate ahead (rare for a cache disk)
        }
    }

    /**
     * Throws where the journal's file system refuses every write (EIO: ext4 shut down, as a dying
     * disk leaves it), before an operation changes the overlay: the records' write failed after it,
     * and the call answered EIO yet was made (a tester's mkdir, mv and rm on a shut-down ext4 showed
     * in the listing, the mkdir reached S3, and the next start undid the rest). One system call.
     */
    void requireWrites() throws IOException {
        openOut();
        out.writesAnswer(end);
    }

    /** How far ahead {@link #ensureRoom} allocates: some thousands of records. */
    static final long ROOM = 1 << 20;
    /** Below this much room left, {@link #ensureRoom} allocates again: more than any one operation's records. */
    private static final long LOW_ROOM = 256 << 10;

    /** Records appended since the last rewrite: when it is time to compact. */
    long appended() {
        return appended;
    }

    /**
     * A descriptor of its own on the journal file, to make what was appended so far durable without
     * the store's monitor ({@link JournalRecords#forceAndClose}); null when nothing was appended. Its own, not the
     * appender's: a rewrite meanwhile closes that one, and its number is reused at once by the next
     * open. Under the store's monitor.
     */
    CacheFile toForce() throws IOException {
        return out == null ? null : out.reopenForReading();
    }

    /** Replaces the journal with {@code records}, atomically (a temporary file, forced, renamed). */
    void rewrite(List<ObjectNode> records) throws IOException {
        closeOut();
        Path tmp = file.resolveSibling(file.getFileName() + ".tmp");
        try (CacheFile ch = CacheFile.replace(tmp)) {
            long at = 0;
            for (ObjectNode r : records) {
                at += ch.write(ByteBuffer.wrap(line(r)), at);
            }
            ch.force(true);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp); // a full disk left it, empty or cut short, beside the journal
            throw e;
        }
        Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        appended = 0;
    }

    private static byte[] line(ObjectNode record) throws IOException {
        String text = JSON.writeValueAsString(record);
        return (crc(text) + " " + text + "\n").getBytes(StandardCharsets.UTF_8);
    }

    /** The CRC-32 of {@code text} as eight lower-case hex digits (HexFormat: String.format's parse was most of an append). */
    private static String crc(String text) {
        CRC32 c = new CRC32();
        c.update(text.getBytes(StandardCharsets.UTF_8));
        return HEX.toHexDigits((int) c.getValue());
    }

    private static final java.util.HexFormat HEX = java.util.HexFormat.of();

    private void closeOut() {
        if (out != null) {
            out.close();
            out = null;
        }
    }

    @Override
    public void close() throws IOException {
        closeOut();
    }
}
