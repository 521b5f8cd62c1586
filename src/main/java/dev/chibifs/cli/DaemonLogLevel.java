package dev.chibifs.cli;

import java.util.List;

/**
 * The daemon's log level, set before anything logs. slf4j-simple reads its default level once,
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

    /** Sets the level {@code args} give a mount for every logger this JVM will make; before the first one is made. */
    static void preset(String[] args) {
        String level = of(args);
        if (level != null) {
            System.setProperty(PROPERTY, level);
        }
    }
}
