package dev.chibifs.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The unit passes {@code systemd-analyze verify}, warnings included (verify exits 0 on an unknown key).
 * The installed paths are pointed at stand-ins in a temporary directory: verify checks that every
 * command is executable, and this test is about the unit, not about what is installed on this machine.
 */
class SystemdUnitTest {

    private static final Path UNIT = Path.of("packaging", "systemd", "chibifs@.service");
    private static final Path ANALYZE = Path.of("/usr/bin/systemd-analyze");

    @TempDir
    Path tmp;

    @Test
    void unitVerifiesCleanly() throws Exception {
        // CI provisions systemd (scripts/provision.sh), so there a missing systemd-analyze is a failure
        boolean ci = "true".equals(System.getenv("CI"));
        assumeTrue(ci || Files.isExecutable(ANALYZE),
                "systemd-analyze is not installed (apt-get install systemd); the unit was not verified");
        assertTrue(Files.isExecutable(ANALYZE), "CI must have systemd-analyze: scripts/provision.sh installs systemd");

        Path bin = Files.createDirectories(tmp.resolve("bin"));
        for (String name : new String[] {"chibifs", "chibifs-wait-mounted", "fusermount"}) {
            Path stub = Files.writeString(bin.resolve(name), "#!/bin/sh\n");
            Files.setPosixFilePermissions(stub, PosixFilePermissions.fromString("rwxr-xr-x"));
        }
        String unit = Files.readString(UNIT)
                .replace("/usr/local/bin/", bin + "/")
                .replace("/bin/fusermount", bin + "/fusermount");
        Path dir = Files.createDirectories(tmp.resolve("units"));
        Files.writeString(dir.resolve("chibifs@.service"), unit);
        Files.createSymbolicLink(dir.resolve("chibifs@mnt-chibi.service"), Path.of("chibifs@.service"));

        Process p = new ProcessBuilder(ANALYZE.toString(), "verify", dir.resolve("chibifs@mnt-chibi.service").toString())
                .redirectErrorStream(true).start();
        p.getOutputStream().close();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "systemd-analyze verify did not finish");
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), output);
        assertEquals("", output.strip(), "verify printed warnings");
    }

    /** Documentation= named /opt/chibifs, the Vagrant box's checkout: it is where provision.sh --install links the docs. */
    @Test
    void theDocumentationItNamesIsWhereProvisionLinksTheDocs() throws Exception {
        java.util.regex.Matcher doc = java.util.regex.Pattern.compile("(?m)^Documentation=file://(/\\S+)/operations\\.md$")
                .matcher(Files.readString(UNIT));
        assertTrue(doc.find(), "a Documentation= line naming operations.md");
        String provision = Files.readString(Path.of("scripts", "provision.sh"));
        assertTrue(provision.contains(" " + doc.group(1) + ":docs)") || provision.contains(" " + doc.group(1) + ":docs "),
                "provision.sh --install links " + doc.group(1) + " to the checkout's docs");
        assertTrue(Files.exists(Path.of("docs", "operations.md")));
    }

    @Test
    void unitReadsItsOptionsPerInstanceAndStopsWithAnUnmount() throws Exception {
        String unit = Files.readString(UNIT);
        assertTrue(unit.contains("EnvironmentFile=/etc/chibifs/%i.conf"), unit);
        assertTrue(unit.contains("ExecStart=/usr/local/bin/chibifs mount --foreground $CHIBIFS_OPTS %f"), unit);
        assertTrue(unit.contains("ExecStop=/usr/local/bin/chibifs umount %f"), unit);
        assertTrue(unit.contains("Restart=on-failure"), unit);
    }
}
