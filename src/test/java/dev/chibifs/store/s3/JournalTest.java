package dev.chibifs.store.s3;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.node.ObjectNode;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The journal's lines stay what earlier versions wrote and read: a restart after an upgrade reads the old journal. */
class JournalTest {

    @TempDir
    Path temp;

    /** A line as every version so far writes it: the CRC-32 of the JSON text in eight lower-case hex digits. */
    private static String line(String json) {
        CRC32 c = new CRC32();
        c.update(json.getBytes(StandardCharsets.UTF_8));
        return String.format("%08x", c.getValue()) + " " + json + "\n";
    }

    @Test
    void appendsTheLinesEarlierVersionsWroteAndReadsThem() throws Exception {
        Path file = temp.resolve("journal");
        List<String> texts = new ArrayList<>();
        try (Journal j = new Journal(file)) {
            for (int i = 0; i < 200; i++) {
                // names whose checksums cover every leading hex digit, 0 and the high bit among them
                ObjectNode r = Journal.JSON.createObjectNode().put("t", "put").put("p", "/shared/f" + i);
                texts.add(Journal.JSON.writeValueAsString(r));
                j.append(r);
            }
        }
        StringBuilder expected = new StringBuilder();
        texts.forEach(t -> expected.append(line(t)));
        assertEquals(expected.toString(), Files.readString(file));

        List<String> problems = new ArrayList<>();
        List<ObjectNode> back = new Journal(file).read(problems::add);
        assertEquals(List.of(), problems);
        assertEquals(200, back.size());
        assertEquals("/shared/f199", back.get(199).get("p").asText());
    }
}
