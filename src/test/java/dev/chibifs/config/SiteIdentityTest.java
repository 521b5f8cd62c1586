package dev.chibifs.config;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/** site.json as chibi writes it gives the site id; anything else gives none, at once, and the daemon goes on. */
class SiteIdentityTest {

    private static final String CHIBIS = "{\"uuid\": \"0b9c\", \"site_id\": \"site-1\"}";

    @TempDir
    Path home;

    private Optional<String> siteId(SiteIdentity site) {
        return assertTimeoutPreemptively(dev.chibifs.testing.OddFiles.PROMPTLY, site::siteId);
    }

    /**
     * A look at the file that asks for the site id again meanwhile (site.json linked into the mount's
     * own /flocks: its stat is a request there, on another worker, which asks) is answered with what
     * is known, at once: each such look asked again, until every worker waited on another.
     */
    @Test
    void aLookThatAsksAgainMeanwhileIsAnsweredWithWhatIsKnown() throws Exception {
        Path file = Files.writeString(home.resolve("site.json"), CHIBIS);
        java.util.concurrent.atomic.AtomicReference<SiteIdentity> site = new java.util.concurrent.atomic.AtomicReference<>();
        java.util.concurrent.atomic.AtomicInteger looks = new java.util.concurrent.atomic.AtomicInteger();
        site.set(new SiteIdentity(file, p -> {
            if (looks.incrementAndGet() < 20) {
                try {
                    java.util.concurrent.CompletableFuture.supplyAsync(() -> site.get().siteId()).get();
                } catch (InterruptedException | java.util.concurrent.ExecutionException e) {
                    throw new IOException(e);
                }
            }
            return FileStamp.of(p);
        }));
        assertEquals(Optional.of("site-1"), siteId(site.get()));
        assertEquals(1, looks.get(), "the request meanwhile did not look");
    }

    @Test
    void aFifoGivesNoSiteIdAtOnceUntilChibiWritesTheFile() throws IOException {
        SiteIdentity site = new SiteIdentity(new ChibiHome(home));
        dev.chibifs.testing.OddFiles.fifo(home.resolve("site.json"));
        assertEquals(Optional.empty(), siteId(site));
        assertEquals(Optional.empty(), siteId(site), "asked again");
        Files.delete(home.resolve("site.json"));
        Files.writeString(home.resolve("site.json"), CHIBIS);
        assertEquals(Optional.of("site-1"), siteId(site));
    }

    @Test
    void aLinkToDevZeroGivesNoSiteIdWithoutReadingIt() throws IOException {
        Files.createSymbolicLink(home.resolve("site.json"), Path.of("/dev/zero"));
        assertEquals(Optional.empty(), siteId(new SiteIdentity(new ChibiHome(home))));
    }

    @Test
    void anOversizeFileGivesNoSiteIdWithoutReadingIt() throws IOException {
        // valid JSON that chibi could read, but no site.json chibi writes is a megabyte
        Files.writeString(home.resolve("site.json"), CHIBIS + " ".repeat((int) HomeFile.SITE_JSON_LIMIT));
        assertEquals(Optional.empty(), siteId(new SiteIdentity(new ChibiHome(home))));
    }

    @Test
    void aLinkToChibisFileGivesItsSiteIdAndItsNextOne() throws IOException {
        Path real = Files.writeString(home.resolve("site.json.real"), CHIBIS);
        Files.createSymbolicLink(home.resolve("site.json"), real);
        SiteIdentity site = new SiteIdentity(new ChibiHome(home));
        assertEquals(Optional.of("site-1"), siteId(site));
        // the file the link names replaced as chibi replaces it: the link itself is as it was
        Path next = Files.writeString(home.resolve("site.json.next"), CHIBIS.replace("site-1", "site-2"));
        Files.move(next, real, java.nio.file.StandardCopyOption.ATOMIC_MOVE);
        assertEquals(Optional.of("site-2"), siteId(site));
    }

    /**
     * site.json rewritten in place to the same size, its modification time put back (cp -p,
     * rsync --inplace -t, touch -r): the new site id counts at the next look. The stamp was
     * inode, size and modification time, which all stayed, so the old id was kept for good.
     */
    @Test
    void aSameSizeRewriteWithItsModificationTimePutBackIsSeen() throws IOException {
        Path file = Files.writeString(home.resolve("site.json"), CHIBIS);
        SiteIdentity site = new SiteIdentity(new ChibiHome(home));
        assertEquals(Optional.of("site-1"), siteId(site));
        java.nio.file.attribute.FileTime modified = Files.getLastModifiedTime(file);
        untilTheClockMovesPast(file);
        try (java.nio.channels.FileChannel c = java.nio.channels.FileChannel.open(file, java.nio.file.StandardOpenOption.WRITE)) {
            c.write(java.nio.ByteBuffer.wrap(CHIBIS.replace("site-1", "site-2").getBytes(java.nio.charset.StandardCharsets.UTF_8)));
        }
        Files.setLastModifiedTime(file, modified);
        assertEquals(modified, Files.getLastModifiedTime(file));
        assertEquals(Optional.of("site-2"), siteId(site));
    }

    /** Returns once a change made now gets a later change time than {@code file}'s: time stamps move by the kernel's tick. */
    private void untilTheClockMovesPast(Path file) throws IOException {
        Object before = Files.getAttribute(file, "unix:ctime");
        Path probe = home.resolve("probe");
        Files.writeString(probe, "");
        while (((java.nio.file.attribute.FileTime) Files.getAttribute(probe, "unix:ctime")).compareTo(
                (java.nio.file.attribute.FileTime) before) <= 0) {
            Files.setLastModifiedTime(probe, java.nio.file.attribute.FileTime.fromMillis(0));
        }
    }
}
