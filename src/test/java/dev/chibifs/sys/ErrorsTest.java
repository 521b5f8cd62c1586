package dev.chibifs.sys;

import org.junit.jupiter.api.Test;

import java.nio.file.AccessDeniedException;
import java.nio.file.DirectoryNotEmptyException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.NotLinkException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each errno becomes the JDK's type where it has one, and every failure keeps its number. */
class ErrorsTest {

    @Test
    void theJdksTypesCarryTheirNumbers() {
        assertInstanceOf(NoSuchFileException.class, Errors.of(Linux.ENOENT, "/a"));
        assertInstanceOf(FileAlreadyExistsException.class, Errors.of(Linux.EEXIST, "/a"));
        assertInstanceOf(AccessDeniedException.class, Errors.of(Linux.EACCES, "/a"));
        assertInstanceOf(NotDirectoryException.class, Errors.of(Linux.ENOTDIR, "/a"));
        assertInstanceOf(DirectoryNotEmptyException.class, Errors.of(Linux.ENOTEMPTY, "/a"));
        assertInstanceOf(IsDirectoryException.class, Errors.of(Linux.EISDIR, "/a"));
        for (int errno : new int[] {Linux.ENOENT, Linux.EEXIST, Linux.EACCES, Linux.ENOTDIR, Linux.ENOTEMPTY,
                Linux.EISDIR, Linux.ENOSPC, Linux.EROFS, Linux.ELOOP, Linux.EXDEV, Linux.ENAMETOOLONG, Linux.EDQUOT}) {
            FileSystemException e = Errors.of(errno, "/a");
            assertEquals(errno, HasErrno.of(e), e.toString());
            assertEquals(errno, Errors.errno(e), e.toString());
            assertEquals("/a", e.getFile());
        }
    }

    @Test
    void theRestAreErrnoExceptionsWithLibcsText() {
        FileSystemException e = Errors.of(Linux.ENOSPC, "/a");
        assertInstanceOf(ErrnoException.class, e);
        assertEquals("No space left on device", e.getReason());
    }

    @Test
    void aMissingNameHasNoStackTrace() {
        assertEquals(0, Errors.of(Linux.ENOENT, "/a").getStackTrace().length);
    }

    @Test
    void theJdksOwnFailuresMeanTheirNumberAndTextMeansNothing() {
        assertEquals(Linux.ENOENT, Errors.errno(new NoSuchFileException("/a")));
        assertEquals(Linux.EINVAL, Errors.errno(new NotLinkException("/a")));
        // strerror's words in a plain exception are for people: no number is read from them
        assertEquals(0, Errors.errno(new FileSystemException("/a", null, "No space left on device")));
        assertTrue(Errors.errno(new java.io.IOException("Permission denied")) == 0);
    }

    /** strerror's words come from libc, once: the callers write only why (they had typed "Resource busy" and "Device or resource busy"). */
    @Test
    void ofPutsLibcsTextBeforeTheDetail() {
        ErrnoException busy = ErrnoException.of(Linux.EBUSY, "/a", "changed while it was read");
        assertEquals(Linux.EBUSY, busy.errno());
        assertEquals("Device or resource busy: changed while it was read", busy.getReason());
        assertEquals("/a: Device or resource busy: changed while it was read", busy.getMessage());
        assertEquals("Invalid argument", ErrnoException.of(Linux.EINVAL, null, null).getReason());
        ErrnoException two = ErrnoException.of(Linux.EINVAL, "/a", "/b", "this store cannot exchange two names");
        assertEquals("/a -> /b: Invalid argument: this store cannot exchange two names", two.getMessage());
    }
}
