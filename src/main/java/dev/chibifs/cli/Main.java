package dev.chibifs.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code chibifs} command: one subcommand class per verb, each returning an exit code. */
@Command(name = "chibifs",
        mixinStandardHelpOptions = true,
        versionProvider = VersionProvider.class,
        description = "Mount the chibi VFS namespace (/shared, /home/<context>, /sys) with its zone policy.",
        subcommands = {
            MountCommand.class,
            UmountCommand.class,
            StatusCommand.class,
            DoctorCommand.class,
        },
        footerHeading = "%nExit codes:%n",
        footer = {
            "  0  success",
            "  1  failure (not found, mount failed, I/O error)",
            "  2  usage: a bad option, value, context name, uid map or config",
        })
public final class Main implements Runnable {

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(System.err);
    }

    /** Builds the command line with chibifs's error handling: one clear line for expected failures, no stack trace. */
    public static CommandLine commandLine() {
        CommandLine cl = new CommandLine(new Main());
        cl.setExecutionExceptionHandler(new ErrorHandler());
        cl.setParameterExceptionHandler(new ErrorHandler());
        return cl;
    }

    public static void main(String[] args) {
        int code = commandLine().execute(args);
        // the mount command returns only when the daemon is done; exit explicitly so no stray thread keeps the JVM
        System.exit(code);
    }
}
