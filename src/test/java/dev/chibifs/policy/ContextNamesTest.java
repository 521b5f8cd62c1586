package dev.chibifs.policy;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.NullAndEmptySource;
import org.junit.jupiter.params.provider.ValueSource;

class ContextNamesTest {

    @ParameterizedTest
    @ValueSource(strings = {"planner", "coder", "a", "A_b-9", "_", "a-", "a--b", "_-x", "systems", "my_system", "sys"})
    void acceptsValidNames(String name) {
        assertTrue(ContextNames.isValid(name));
        assertEquals(name, ContextNames.validate(name));
        assertEquals(name, Caller.context(name).name());
    }

    @ParameterizedTest
    @NullAndEmptySource
    @ValueSource(strings = {"-", "--", "-x", "-system", "--context", "system", "SYSTEM", "System", "sYsTeM", "../x", "/", "a/b", "has space", "a.b", ".",
        "..", "tab\t", "caf\u00e9"})
    void refusesInvalidNamesNamingValueAndRule(String name) {
        assertFalse(ContextNames.isValid(name));
        InvalidContextNameException e = assertThrows(InvalidContextNameException.class,
                () -> ContextNames.validate(name));
        // escaped as ls -b: a tab or newline in the name stays out of the one-line message
        assertTrue(e.getMessage().contains("'" + dev.chibifs.path.Names.shown(String.valueOf(name)) + "'"), e.getMessage());
        assertFalse(e.getMessage().contains("\t"), e.getMessage());
        assertTrue(e.getMessage().contains(ContextNames.RULE), e.getMessage());
        assertThrows(InvalidContextNameException.class, () -> Caller.context(name));
    }

    @Test
    void aNameIsAPathComponentOfAtMost255Bytes() {
        assertEquals("x".repeat(255), ContextNames.validate("x".repeat(255)));
        String longer = "x".repeat(256);
        InvalidContextNameException e = assertThrows(InvalidContextNameException.class,
                () -> ContextNames.validate(longer));
        assertEquals("invalid context name '" + longer + "': a context name is [A-Za-z0-9_-]+ of at most 255"
                + " characters, not starting with '-', and never 'system' in any case", e.getMessage());
    }

    @Test
    void systemIsReservedInEveryCase() {
        for (String s : new String[] {"system", "SYSTEM", "System", "sYsTeM", "SYStem"}) {
            assertTrue(ContextNames.isReserved(s), s);
        }
        assertFalse(ContextNames.isReserved("systemd"));
        assertFalse(ContextNames.isReserved(null));
    }
}
