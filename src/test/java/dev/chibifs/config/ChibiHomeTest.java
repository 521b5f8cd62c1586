package dev.chibifs.config;

import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

class ChibiHomeTest {

    @Test
    void theOptionWins() {
        ChibiHome h = ChibiHome.resolve(Path.of("/srv/chibi"), Map.of("CHIBI_HOME", "/x", "HOME", "/home/u"));
        assertEquals(Path.of("/srv/chibi"), h.dir());
        assertEquals(Path.of("/srv/chibi/vfs"), h.store());
        assertEquals(Path.of("/srv/chibi/config.toml"), h.configFile());
    }

    @Test
    void thenChibiHome() {
        assertEquals(Path.of("/x"), ChibiHome.resolve(null, Map.of("CHIBI_HOME", "/x", "HOME", "/home/u")).dir());
    }

    @Test
    void thenHomeAsChibiFindsIt() {
        assertEquals(Path.of("/home/u/.chibi"), ChibiHome.resolve(null, Map.of("HOME", "/home/u")).dir());
        assertEquals(Path.of("/home/u/.chibi"), ChibiHome.resolve(null, Map.of("CHIBI_HOME", " ", "HOME", "/home/u")).dir());
        assertEquals(Path.of("/home/u/.chibi"), ChibiHome.resolve(null, Map.of("CHIBI_HOME", "", "HOME", "/home/u")).dir());
    }

    @Test
    void lastTheUsersHomeFromThePasswordDatabase() {
        assertEquals(Path.of(System.getProperty("user.home"), ".chibi"), ChibiHome.resolve(null, Map.of()).dir());
    }
    @Test
    void aChibiHomeThatIsAFileIsNamed(@org.junit.jupiter.api.io.TempDir java.nio.file.Path dir) throws Exception {
        java.nio.file.Path file = java.nio.file.Files.writeString(dir.resolve("file"), "x");
        ConfigException e = org.junit.jupiter.api.Assertions.assertThrows(ConfigException.class,
                () -> ChibiHome.resolve(null, java.util.Map.of("CHIBI_HOME", file.toString())));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().startsWith("$CHIBI_HOME '" + file + "' is not a directory"),
                e.getMessage());
        // below a file: it said "config.toml: cannot read: Not a directory"
        e = org.junit.jupiter.api.Assertions.assertThrows(ConfigException.class,
                () -> ChibiHome.resolve(null, java.util.Map.of("CHIBI_HOME", file + "/sub/home")));
        org.junit.jupiter.api.Assertions.assertTrue(e.getMessage().startsWith("$CHIBI_HOME '" + file + "/sub/home' is below "
                + file + ", a file"), e.getMessage());
        org.junit.jupiter.api.Assertions.assertNull(ChibiHome.notADirectory(dir.resolve("not/yet/made")));
    }
}
