package dev.chibifs.fuse;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Syscalls;
import dev.chibifs.sys.Linux;
import dev.chibifs.testing.FuseSupport;
import dev.chibifs.testing.MountedFs;
import dev.chibifs.testing.Sh;
import dev.chibifs.testing.TestUsers;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Mounting and unmounting without libfuse, against the real kernel, with INIT answered by hand. */
@Timeout(60)
class FuseMountTest {

    private Path root;
    private Path mnt;

    @BeforeEach
    void setUp() throws IOException {
        FuseSupport.requireFuse();
        FuseSupport.requireRoot();
        root = MountedFs.tempRoot();
        mnt = Files.createDirectory(root.resolve("mnt"));
    }

    @AfterEach
    void tearDown() {
        // a failed test must not leave a mount for later tests (or a hung one for whoever touches it)
        if (mnt != null && MountTableWatch.typeAt(mnt).isPresent()) {
            FuseMount.unmount(mnt, true);
        }
    }

    @Test
    void asRootMountsWithMountSyscallAnswersInitAndEndsAtTheUnmount() throws Exception {
        MountSpec spec = MountSpec.parse(List.of("fsname=chibifs-test,noatime,allow_other"));
        try (FuseDevice device = FuseMount.mount(mnt, spec)) {
            assertEquals(Optional.of("fuse.chibifs"), MountTableWatch.typeAt(mnt));
            String line = Files.readAllLines(Path.of("/proc/self/mounts")).stream()
                    .filter(l -> l.split(" ")[1].equals(mnt.toString())).findFirst().orElseThrow();
            assertTrue(line.startsWith("chibifs-test " + mnt + " fuse.chibifs "), line);
            assertTrue(line.contains("nosuid") && line.contains("nodev") && line.contains("noatime")
                    && line.contains("allow_other") && line.contains("user_id=0"), line);

            InitExchange.Init init = InitExchange.answerInit(device);
            assertEquals(7, init.major(), "the kernel speaks FUSE 7.x");
            System.out.println("INIT from Linux " + System.getProperty("os.version") + ": 7." + init.minor()
                    + ", " + init.length() + " bytes, max_readahead " + init.maxReadahead() + ", flags 0x"
                    + Long.toHexString(init.flags()) + ": " + init.flagNames());

            // the kernel took the reply: a lookup now reaches the daemon (after a refused INIT it fails at once)
            InitExchange.Refuser refuser = new InitExchange.Refuser(device);
            refuser.start();
            assertFalse(Files.exists(mnt.resolve("probe")));
            assertTrue(refuser.opcodes.contains(InitExchange.FUSE_LOOKUP), "requests seen: " + refuser.opcodes);

            FuseMount.Result r = FuseMount.unmount(mnt, true);
            assertTrue(r.ok(), r.message());
            refuser.join(Duration.ofSeconds(10).toMillis());
            assertFalse(refuser.isAlive(), "the reader blocked in read(2) returns when the mount goes");
            assertTrue(refuser.end.get() instanceof ChannelClosedException, String.valueOf(refuser.end.get()));
            assertThrows(ChannelClosedException.class, () -> device.read(InitExchange.requestBuffer()));
            assertEquals(Optional.empty(), MountTableWatch.typeAt(mnt));
        }
    }

    @Test
    void asAUserMountsThroughFusermountAndUnmountsWithIt() throws Exception {
        TestUsers.User nobody = TestUsers.ensure("nobody");
        // fusermount opens /dev/fuse as the user, not as root: udev's default rules make it 0666, but
        // a machine without udev (a container, a bare VM) keeps the kernel's 0600
        Sh.run("chmod 0666 /dev/fuse").ok();
        Sh.run("chown " + nobody.uid() + " " + mnt).ok();
        String classpath = MountedFs.readableClasspath(Files.createDirectory(root.resolve("classpath")));
        Path java = Path.of(System.getProperty("java.home"), "bin", "java");
        Sh.Result r = Sh.as(nobody.uid(), nobody.gid(), root, java + " " + String.join(" ", MountedFs.nativeAccessFlags()) + " -cp " + classpath + " "
                + UserMountProbe.class.getName() + " " + mnt + " fsname=chibifs-user");
        Sh.run("rm -rf " + root.resolve("classpath")); // some 10 MB a run, else left in /tmp
        assertEquals(0, r.exitCode(), r.out() + r.err());
        assertTrue(r.out().startsWith("ok mounted fuse.chibifs, INIT 7."), r.out() + r.err());
        System.out.println("as uid " + nobody.uid() + " through " + FuseMount.helper() + ": " + r.out().strip());
    }

    @Test
    void backingFilesRegisterOnceInitAskedForPassthrough() throws Exception {
        Path file = Files.writeString(root.resolve("backing"), "store file");
        int fd = LibC.open(LibC.path(file.toString()), Linux.O_RDWR | Linux.O_CLOEXEC, 0);
        assertTrue(fd >= 0);
        try {
            try (FuseDevice plain = FuseMount.mount(mnt, MountSpec.defaults())) {
                InitExchange.answerInit(plain, false);
                ErrnoException refused = assertThrows(ErrnoException.class, () -> plain.openBacking(fd));
                assertEquals(Linux.EPERM, refused.errno(), "without FUSE_PASSTHROUGH in INIT the kernel refuses");
                assertTrue(FuseMount.unmount(mnt, true).ok());
            }
            Optional<String> gone = MountTableWatch.typeAt(mnt);
            assertEquals(Optional.empty(), gone);
            try (FuseDevice device = FuseMount.mount(mnt, MountSpec.defaults())) {
                InitExchange.Init init = InitExchange.answerInit(device, true);
                Assumptions.assumeTrue((init.flags() & (1L << 37)) != 0, "this kernel offers no FUSE_PASSTHROUGH");
                int id = device.openBacking(fd);
                assertTrue(id > 0, "backing id " + id);
                device.closeBacking(id);
                ErrnoException twice = assertThrows(ErrnoException.class, () -> device.closeBacking(id));
                assertEquals(Linux.ENOENT, twice.errno());
                assertTrue(FuseMount.unmount(mnt, true).ok());
            }
        } finally {
            Syscalls.close(fd);
        }
    }

    @Test
    void autoUnmountGoesThroughFusermountWhichUnmountsWhenTheDeviceCloses() throws Exception {
        assertNotNull(FuseMount.helper(), "fusermount is installed (FuseSupport checked)");
        // fusermount's auto_unmount cannot unmount where / is no mount point (a chroot into a
        // directory: it fails to make mounts private and exits); doctor names that host
        Assumptions.assumeTrue(MountTable.read(MountTable.SYSTEM_TABLE).stream()
                .anyMatch(m -> m.mountpoint().toString().equals("/")), "/ is not a mount point here (a chroot?)");
        FuseDevice device = FuseMount.mount(mnt, MountSpec.parse(List.of("auto_unmount")));
        try {
            assertEquals(Optional.of("fuse.chibifs"), MountTableWatch.typeAt(mnt));
            assertEquals(7, InitExchange.answerInit(device).major());
        } finally {
            device.close();
        }
        assertTrue(MountTableWatch.awaitUnmounted(mnt, Duration.ofSeconds(20)),
                "fusermount unmounts once the daemon's end of its socket closes");
    }

    @Test
    void aMountpointThatIsNotEmptyIsRefusedUnlessNonempty() throws Exception {
        Files.writeString(mnt.resolve("occupied"), "x");
        MountException e = assertThrows(MountException.class, () -> FuseMount.mount(mnt, MountSpec.defaults()));
        assertEquals("mountpoint " + mnt + " is not empty: choose an empty directory, or pass -o nonempty", e.getMessage());
        assertEquals(Optional.empty(), MountTableWatch.typeAt(mnt));
        try (FuseDevice device = FuseMount.mount(mnt, MountSpec.parse(List.of("nonempty")))) {
            assertFalse(device.isClosed());
            assertEquals(Optional.of("fuse.chibifs"), MountTableWatch.typeAt(mnt));
            assertTrue(FuseMount.unmount(mnt, true).ok());
        }
    }

    /**
     * Two mounts raced to one empty directory: the loser found the winner's root there and said "not empty,
     * or pass -o nonempty", which would have mounted it on top. A tmpfs with a file stands for the winner.
     */
    @Test
    void aMountpointAnotherMountTookMeanwhileSaysSoNotNotEmpty() throws Exception {
        Sh.run("mount -t tmpfs chibifs-test-winner " + mnt).ok();
        Files.writeString(mnt.resolve("shared"), "the winner's");
        MountException e = assertThrows(MountException.class, () -> FuseMount.mount(mnt, MountSpec.defaults()));
        assertEquals("mountpoint " + mnt + " is already a mount point (tmpfs): another mount took it meanwhile", e.getMessage());
        assertEquals(Optional.of("tmpfs"), e.mountedThere().map(MountTable.MountEntry::fsType));
        assertEquals(Optional.of("tmpfs"), MountTableWatch.typeAt(mnt), "nothing mounted on top");
        assertTrue(FuseMount.unmount(mnt, false).ok());
    }

    /**
     * Two mounts raced to one empty directory and both passed the emptiness check before either called
     * mount(2): the kernel stacked the second on the first. An empty tmpfs there stands for the winner
     * that mounted between the check and mount(2): ours comes off again, and the winner stays.
     */
    @Test
    void aMountThatLandedOnAnotherMountMadeMeanwhileUnmountsItselfAndSaysSo() throws Exception {
        Sh.run("mount -t tmpfs chibifs-test-winner " + mnt).ok();
        try {
            MountException e = assertThrows(MountException.class, () -> FuseMount.mount(mnt, MountSpec.defaults()));
            assertEquals("mountpoint " + mnt + " is already a mount point (tmpfs): another mount took it meanwhile", e.getMessage());
            assertEquals(Optional.of("tmpfs"), e.mountedThere().map(MountTable.MountEntry::fsType));
            assertEquals(Optional.of(mnt), e.mountedThere().map(MountTable.MountEntry::mountpoint));
            assertEquals(List.of("tmpfs"), MountTable.stackAt(FuseMount.MOUNTINFO, mnt.toString()).stream()
                    .map(MountTable.InfoLine::type).toList(), "ours is gone, the winner's stays");
            try (java.util.stream.Stream<Path> listed = Files.list(mnt)) {
                assertTrue(listed.findAny().isEmpty(), "the winner's mount still answers");
            }
        } finally {
            assertTrue(FuseMount.unmount(mnt, false).ok());
        }
    }

    @Test
    void failuresSayWhyInOneLine() {
        MountException missing = assertThrows(MountException.class,
                () -> FuseMount.mount(root.resolve("missing"), MountSpec.defaults()));
        assertEquals("mountpoint " + root.resolve("missing") + " does not exist (mkdir -p " + root.resolve("missing") + ")",
                missing.getMessage());

        FuseMount.Result notMounted = FuseMount.unmount(mnt, false);
        assertFalse(notMounted.ok());
        assertFalse(notMounted.busy());
        assertEquals("cannot unmount " + mnt + ": Invalid argument (not a mount point)", notMounted.message());
    }

    @Test
    void optionsTheKernelRefusesAreNamedInTheOneLine() throws Exception {
        // Linux 6.18 refuses blksize= for anything but fuseblk; a later kernel may take it
        try (FuseDevice device = FuseMount.mount(mnt, MountSpec.parse(List.of("blksize=4096")))) {
            assertFalse(device.isClosed());
            assertTrue(FuseMount.unmount(mnt, true).ok());
        } catch (MountException e) {
            assertEquals("cannot mount " + mnt + ": mount(2) said Invalid argument (the kernel refused the options"
                    + " blksize=4096; kernels up to at least 6.18 take blksize= for block-device mounts only)", e.getMessage());
            assertEquals(Optional.empty(), MountTableWatch.typeAt(mnt));
        }
    }

    @Test
    void aBusyMountSaysBusyAndALazyUnmountStillDetachesIt() throws Exception {
        try (FuseDevice device = FuseMount.mount(mnt, MountSpec.defaults())) {
            InitExchange.answerInit(device);
            InitExchange.Refuser refuser = new InitExchange.Refuser(device);
            refuser.start();
            // a process whose working directory is the mount keeps it busy
            Process inside = new ProcessBuilder("sleep", "60").directory(mnt.toFile()).start();
            try {
                FuseMount.Result busy = FuseMount.unmount(mnt, false);
                assertFalse(busy.ok());
                assertTrue(busy.busy(), busy.message());
                assertEquals("cannot unmount " + mnt + ": Device or resource busy", busy.message());
                assertTrue(FuseMount.unmount(mnt, true).ok());
                assertEquals(Optional.empty(), MountTableWatch.typeAt(mnt));
            } finally {
                inside.destroyForcibly().waitFor();
            }
            refuser.join(Duration.ofSeconds(10).toMillis());
            assertTrue(refuser.end.get() instanceof ChannelClosedException, String.valueOf(refuser.end.get()));
        }
    }
}
