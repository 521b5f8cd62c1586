package dev.chibifs.store.s3;

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
 * {@link #force()} is for fsync, which promises more.
 */
final class Journal implements Closeable {

    static final ObjectMapper JSON = new ObjectMapper();

    private final Path file;
    private CacheFile out;
    /** Where the next record goes: a record torn by a failed write (ENOSPC) is written over. */
    private long end;
    private long appended;

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
        if (out == null) {
            out = CacheFile.openOrCreate(file);
            end = out.size();
        }
        end += out.write(ByteBuffer.wrap(line(record)), end);
        appended++;
    }

    /** Records appended since the last rewrite: when it is time to compact. */
    long appended() {
        return appended;
    }

    /** Makes what was appended durable. */
    void force() throws IOException {
        if (out != null) {
            out.force(false);
        }
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
