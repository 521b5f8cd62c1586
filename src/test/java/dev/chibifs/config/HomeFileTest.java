package dev.chibifs.config;

import dev.chibifs.sys.Linux;
import dev.chibifs.testing.OddFiles;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * Files of chibi's home that are not what chibi writes: a fifo hung every flock request in open(2),
 * a link to /dev/zero was read until the daemon ran out of memory.
 */
class HomeFileTest {

    @TempDir
    Path dir;

    private String refused(Path file, long limit) {
        return assertTimeoutPreemptively(OddFiles.PROMPTLY,
                () -> assertThrows(HomeFile.RefusedException.class, () -> HomeFile.read(file, limit)).getMessage());
    }

    @Test
    void aFifoIsRefusedAtOnceWithoutWaitingForAWriter() throws IOException {
        Path site = OddFiles.fifo(dir.resolve("site.json"));
        assertEquals(site + ": " + HomeFile.NOT_REGULAR, refused(site, HomeFile.SITE_JSON_LIMIT));
    }

    @Test
    void aLinkToADeviceIsRefusedWithoutReadingIt() throws IOException {
        Path site = Files.createSymbolicLink(dir.resolve("site.json"), Path.of("/dev/zero"));
        assertEquals(site + ": " + HomeFile.NOT_REGULAR, refused(site, HomeFile.SITE_JSON_LIMIT));
    }

    @Test
    void aFileOverItsLimitIsRefusedNamingTheLimit() throws IOException {
        Path site = OddFiles.sized(dir.resolve("site.json"), HomeFile.SITE_JSON_LIMIT + 1);
        assertEquals(site + ": larger than 1 MiB, the most chibifs reads of site.json: not read",
                refused(site, HomeFile.SITE_JSON_LIMIT));
        OddFiles.sized(site, HomeFile.SITE_JSON_LIMIT);
        assertEquals(HomeFile.SITE_JSON_LIMIT, HomeFile.read(site, HomeFile.SITE_JSON_LIMIT).length, "the limit itself is read");
    }

    @Test
    void aLinkToARegularFileIsReadAsThatFile() throws IOException {
        Path real = Files.writeString(dir.resolve("dotfiles-config.toml"), "tool_cache_max_age_days = 3\n");
        Path link = Files.createSymbolicLink(dir.resolve("config.toml"), real);
        assertArrayEquals("tool_cache_max_age_days = 3\n".getBytes(StandardCharsets.UTF_8),
                HomeFile.read(link, HomeFile.CONFIG_TOML_LIMIT));
    }

    @Test
    void anAbsentFileIsNoSuchFileAndADirectoryIsOne() throws IOException {
        assertThrows(NoSuchFileException.class, () -> HomeFile.read(dir.resolve("none"), HomeFile.SITE_JSON_LIMIT));
        Path d = Files.createDirectory(dir.resolve("config.toml"));
        assertEquals(Linux.EISDIR, dev.chibifs.sys.Errors.errno(
                assertThrows(IOException.class, () -> HomeFile.read(d, HomeFile.CONFIG_TOML_LIMIT))));
    }

    /** A log that grew for days is read from where a start began, its limit counted from there. */
    @Test
    void aReadFromAnOffsetCountsTheLimitFromThere() throws IOException {
        Path log = OddFiles.sized(dir.resolve("mount.log"), 10L << 20);
        Files.write(log, "started\n".getBytes(StandardCharsets.UTF_8), java.nio.file.StandardOpenOption.APPEND);
        assertArrayEquals("started\n".getBytes(StandardCharsets.UTF_8), HomeFile.read(log, 10L << 20, 1L << 20));
        assertThrows(HomeFile.RefusedException.class, () -> HomeFile.read(log, 0, 1L << 20));
    }
}
