package dev.chibifs.cli;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The daemon's log level, and the quieter one of the other commands, set before anything logs. slf4j-simple reads its default level once,
 * when the first logger is made, and fixes each logger's level as it is made: checks that run
 * before {@code mount} serves (the mount table, the kernel's version, the options) load classes
 * with loggers of their own, so a level set by {@link MountCommand} itself came too late and
 * {@code --log-level} changed nothing.
 */
final class DaemonLogLevel {

    /** The levels {@code --log-level} takes, quietest first. */
    static final List<String> LEVELS = List.of("error", "warn", "info", "debug", "trace");

    /** What a mount logs without {@code --log-level}; MountCommand's option default says the same. */
    static final String DEFAULT = "info";

    static final String OPTION = "--log-level";

    /** The system property slf4j-simple reads its default level from. */
    static final String PROPERTY = "org.slf4j.simpleLogger.defaultLogLevel";

    private DaemonLogLevel() {
    }

    /**
     * The level {@code args} give a {@code mount} (the last {@code --log-level} before {@code --}),
     * its default when they give none; null for another command, or a value that is no level
     * (the mount then refuses it with the rule).
     */
    static String of(String[] args) {
        if (args.length == 0 || !"mount".equals(args[0])) {
            return null;
        }
        String level = DEFAULT;
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--")) {
                break;
            }
            if (a.equals(OPTION) && i + 1 < args.length) {
                level = args[++i];
            } else if (a.startsWith(OPTION + "=")) {
                level = a.substring(OPTION.length() + 1);
            }
        }
        return LEVELS.contains(level) ? level : null;
    }

    /**
     * What another command logs: warnings and errors only. Its stderr is its {@code chibifs:} line
     * (docs/cli-tools.md), and a success prints nothing: an append to an S3 prefix said
     * {@code INFO S3Storage - merged: ...} on a success.
     */
    static final String COMMAND = "warn";

    /** slf4j-simple's property for one logger's level: this, then the logger's name. */
    static final String LOGGER_PROPERTY = "org.slf4j.simpleLogger.log.";

    /**
     * Loggers whose warnings a command's own {@code chibifs:} line says where they matter (a
     * malformed flock registry: the refusal names it), so a command keeps them to errors.
     */
    static final List<String> SAID_BY_THE_COMMAND = List.of("dev.chibifs.router.FlockRegistryReader");

    /** The logging properties {@code args} call for: a mount's level, else a command's quieter ones. */
    static Map<String, String> properties(String[] args) {
        if (args.length > 0 && "mount".equals(args[0])) {
            String level = of(args);
            return level == null ? Map.of() : Map.of(PROPERTY, level);
        }
        Map<String, String> p = new HashMap<>();
        p.put(PROPERTY, COMMAND);
        SAID_BY_THE_COMMAND.forEach(logger -> p.put(LOGGER_PROPERTY + logger, "error"));
        return p;
    }

    /** Sets the levels {@code args} call for ({@link #properties}) for every logger this JVM will make; before the first one is made. */
    static void preset(String[] args) {
        properties(args).forEach(System::setProperty);
    }
}
