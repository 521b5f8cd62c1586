package dev.chibifs.fuse;

import dev.chibifs.sys.ErrnoException;
import dev.chibifs.sys.LibC;
import dev.chibifs.sys.Syscalls;
import dev.chibifs.sys.Linux;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The device's calls without a mount: a SOCK_SEQPACKET socket keeps message boundaries as
 * /dev/fuse does, so one end stands in for the kernel and the other is the device.
 */
@Timeout(30)
class FuseDeviceTest {

    private static final int SOCK_SEQPACKET = 5;

    private int kernel;
    private FuseDevice device;

    @BeforeEach
    void pair() {
        int[] sv = new int[2];
        assertEquals(0, LibC.socketpair(Linux.AF_UNIX, SOCK_SEQPACKET | Linux.SOCK_CLOEXEC, 0, sv));
        kernel = sv[0];
        device = new FuseDevice(sv[1], "/test/mnt", null);
    }

    @AfterEach
    void close() {
        device.close();
        Syscalls.close(kernel);
    }

    @Test
    void ioctlNumbersAreThoseOfTheKernelHeader() {
        assertEquals(0x4010E501L, FuseDevice.FUSE_DEV_IOC_BACKING_OPEN);
        assertEquals(0x4004E502L, FuseDevice.FUSE_DEV_IOC_BACKING_CLOSE);
    }

    @Test
    void aReadTakesOneWholeMessageFromPositionZero() throws IOException {
        send("first request");
        send("second");
        ByteBuffer buf = ByteBuffer.allocateDirect(FuseDevice.MIN_READ_BUFFER);
        buf.position(100);
        assertEquals(13, device.read(buf));
        assertEquals(0, buf.position());
        assertEquals(13, buf.limit());
        assertEquals("first request", StandardCharsets.UTF_8.decode(buf).toString());
        assertEquals(6, device.read(buf));
        assertEquals("second", StandardCharsets.UTF_8.decode(buf).toString());
    }

    @Test
    void aWriteSendsTheRemainingBytesOfEveryPartAsOneMessage() throws IOException {
        ByteBuffer header = ByteBuffer.allocateDirect(8).put("xxHEAD:".getBytes(StandardCharsets.US_ASCII)).flip();
        header.position(2);
        ByteBuffer heap = ByteBuffer.wrap("heap,".getBytes(StandardCharsets.US_ASCII));
        ByteBuffer empty = ByteBuffer.allocate(0);
        ByteBuffer tail = ByteBuffer.allocateDirect(4).put("tail".getBytes(StandardCharsets.US_ASCII)).flip();
        device.write(header, heap, empty, tail);
        assertEquals("HEAD:heap,tail", receive());
        assertFalse(header.hasRemaining() || heap.hasRemaining() || tail.hasRemaining(), "positions moved to the limits");

        ByteBuffer[] many = new ByteBuffer[40];
        for (int i = 0; i < many.length; i++) {
            many[i] = ByteBuffer.wrap(new byte[] {(byte) ('a' + i % 26)});
        }
        device.write(many);
        assertEquals("abcdefghijklmnopqrstuvwxyzabcdefghijklmn", receive());
    }

    @Test
    void refusalsCarryTheirErrno() {
        ErrnoException e = assertThrows(ErrnoException.class, () -> device.openBacking(0));
        assertEquals(Linux.ENOTTY, e.errno(), "a socket has no FUSE ioctls");
        assertEquals("/dev/fuse: Inappropriate ioctl for device", e.getMessage());
        Syscalls.close(kernel);
        kernel = -1;
        ErrnoException gone = assertThrows(ErrnoException.class, () -> device.write(ByteBuffer.allocate(1)));
        assertEquals(Linux.EPIPE, gone.errno());
    }

    @Test
    void badBuffersAreRefusedNamingTheRule() {
        IllegalArgumentException small = assertThrows(IllegalArgumentException.class,
                () -> device.read(ByteBuffer.allocateDirect(4096)));
        assertEquals("a FUSE read needs a direct buffer of at least 8192 bytes, not a direct one of 4096", small.getMessage());
        assertThrows(IllegalArgumentException.class, () -> device.read(ByteBuffer.allocate(65536)));
        assertThrows(IllegalArgumentException.class, () -> device.write());
    }

    @Test
    void closingUnderAReaderWaitsForItThenEveryCallSaysClosed() throws Exception {
        CompletableFuture<String> reader = CompletableFuture.supplyAsync(() -> {
            try {
                ByteBuffer buf = ByteBuffer.allocateDirect(FuseDevice.MIN_READ_BUFFER);
                device.read(buf);
                return StandardCharsets.UTF_8.decode(buf).toString();
            } catch (IOException e) {
                return e.toString();
            }
        });
        // wait for the reader to be inside the call (it blocks there: nothing was sent yet)
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (device.callsInFlight() == 0) {
            assertTrue(System.nanoTime() < deadline, "the reader never entered read");
            Thread.onSpinWait();
        }
        device.close();
        assertTrue(device.isClosed());
        int fd = device.descriptor();
        send("late request");
        assertEquals("late request", reader.get(10, TimeUnit.SECONDS), "the descriptor stayed open for the reader");
        assertEquals(-1, LibC.fcntl(fd, Linux.F_GETFD, 0), "closed once the last call returned");
        assertThrows(ChannelClosedException.class, () -> device.read(ByteBuffer.allocateDirect(FuseDevice.MIN_READ_BUFFER)));
        assertThrows(ChannelClosedException.class, () -> device.write(ByteBuffer.allocate(1)));
        device.close();
    }

    @Test
    void workersReadAndWriteOneDeviceAtOnce() throws Exception {
        int workers = 4;
        int requests = 2000;
        List<Thread> threads = new ArrayList<>();
        for (int w = 0; w < workers; w++) {
            Thread t = new Thread(() -> {
                ByteBuffer in = ByteBuffer.allocateDirect(FuseDevice.MIN_READ_BUFFER);
                ByteBuffer header = ByteBuffer.allocateDirect(6);
                try {
                    while (true) {
                        device.read(in);
                        header.clear().put("reply:".getBytes(StandardCharsets.US_ASCII)).flip();
                        device.write(header, ByteBuffer.wrap(StandardCharsets.UTF_8.decode(in).toString().getBytes(
                                StandardCharsets.UTF_8)));
                    }
                } catch (IOException end) {
                    // the fake kernel closed its end: read(2) says 0, the device EIO
                }
            }, "worker-" + w);
            t.start();
            threads.add(t);
        }
        CompletableFuture<Set<String>> replies = CompletableFuture.supplyAsync(() -> {
            Set<String> got = new HashSet<>();
            for (int i = 0; i < requests; i++) {
                got.add(receive());
            }
            return got;
        });
        Set<String> expected = new HashSet<>();
        for (int i = 0; i < requests; i++) {
            send("request " + i);
            expected.add("reply:request " + i);
        }
        assertEquals(expected, replies.get(20, TimeUnit.SECONDS), "every request answered once, none torn");
        Syscalls.close(kernel);
        kernel = -1;
        for (Thread t : threads) {
            t.join(10_000);
            assertFalse(t.isAlive());
        }
    }

    private void send(String s) {
        ByteBuffer b = ByteBuffer.allocateDirect(s.length()).put(s.getBytes(StandardCharsets.UTF_8)).flip();
        long n = LibC.writev(kernel, iov(b), 1);
        assertEquals(s.length(), n);
    }

    private String receive() {
        ByteBuffer b = ByteBuffer.allocateDirect(4096);
        long n = LibC.read(kernel, com.kenai.jffi.MemoryIO.getInstance().getDirectBufferAddress(b), 4096);
        assertTrue(n >= 0, "read: " + LibC.strerror(LibC.errno()));
        b.limit((int) n);
        return StandardCharsets.UTF_8.decode(b).toString();
    }

    private static long iov(ByteBuffer b) {
        ByteBuffer iov = ByteBuffer.allocateDirect(16).order(java.nio.ByteOrder.nativeOrder());
        iov.putLong(0, com.kenai.jffi.MemoryIO.getInstance().getDirectBufferAddress(b)).putLong(8, b.remaining());
        KEEP.set(iov);
        return com.kenai.jffi.MemoryIO.getInstance().getDirectBufferAddress(iov);
    }

    /** Keeps the iovec's memory reachable until the call that uses it returns. */
    private static final ThreadLocal<ByteBuffer> KEEP = new ThreadLocal<>();
}
