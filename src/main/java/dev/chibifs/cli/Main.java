package dev.chibifs.cli;

import dev.chibifs.sys.NativeStub;
import dev.chibifs.sys.Umask;
import picocli.CommandLine;
import picocli.CommandLine.Command;

import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.Callable;

/** The {@code chibifs} command: one subcommand class per verb, each returning an exit code. */
@Command(name = "chibifs",
        mixinStandardHelpOptions = true,
        versionProvider = VersionProvider.class,
        description = {"Mount the chibi VFS namespace (/shared, /home/<context>, /sys) with its zone policy.",
            "Or work on it without a mount, through the same router and policy: ls, info, cat, head, tail,"
                + " lines and grep read; write, append, mkdir, rm, cp, mv and edit change it as a caller"
                + " (--as NAME, $CHIBI_CONTEXT, or --as-system). A URI has three slashes: vfs:///shared/tasks.md."},
        footerHeading = "%nExit codes:%n",
        footer = {
            "  0  success",
            "  1  failure: not found (grep: nothing matched), mount failed",
            "  2  usage: a bad option, value, URI, context name, uid map or config;",
            "     a vfs command that writes without a caller",
            "  3  permission denied by the zone policy (or the operating system)",
            "  4  conflict: edit matched zero or several times, a directory where a",
            "     file is needed, a file in the way, ...",
            "  5  other I/O error (vfs commands; sync: a store could not)",
            "  6  out of memory: the Java heap (CHIBIFS_JAVA_OPTS=-Xmx...) was too small",
        })
public final class Main implements Callable<Integer> {

    /** Every subcommand, in the order the root's help lists them. */
    static final List<Class<?>> SUBCOMMANDS = List.of(
            MountCommand.class,
            UmountCommand.class,
            StatsCommand.class,
            SyncCommand.class,
            TraceCommand.class,
            LsCommand.class,
            InfoCommand.class,
            CatCommand.class,
            HeadCommand.class,
            TailCommand.class,
            LinesCommand.class,
            GrepCommand.class,
            WriteCommand.class,
            AppendCommand.class,
            MkdirCommand.class,
            RmCommand.class,
            CpCommand.class,
            MvCommand.class,
            EditCommand.class,
            CacheCommand.class,
            StatusCommand.class,
            DoctorCommand.class);

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    /** Without a command there is nothing to do: the usage, and exit 2 as for any usage error. */
    @Override
    public Integer call() {
        spec.commandLine().usage(spec.commandLine().getErr());
        return ExitCodes.USAGE;
    }

    /** Builds the command line with chibifs's error handling: one clear line for expected failures, no stack trace. */
    public static CommandLine commandLine() {
        return commandLine(Terminal.system());
    }

    /** The command line for {@code terminal}'s environment and streams; tests run commands in-process this way. */
    static CommandLine commandLine(Terminal terminal) {
        return commandLine(terminal, SUBCOMMANDS);
    }

    /**
     * The command line with only {@code subcommands} under the root. Picocli builds the model of
     * every command it is given, by reflection, before it parses anything: for a command that runs
     * a second, and for the daemon {@code mount} starts, the other nineteen were most of the
     * start-up. {@link #main} gives it the one named first, when one is; help lists them all.
     */
    static CommandLine commandLine(Terminal terminal, List<Class<?>> subcommands) {
        TerminalFactory factory = new TerminalFactory(terminal);
        CommandLine cl = new CommandLine(new Main(), factory);
        for (Class<?> c : subcommands) {
            CommandLine sub = new CommandLine(c, factory);
            versioned(sub);
            cl.addSubcommand(sub);
        }
        // `chibifs help` and `chibifs help mount` print usage (they were refused as an unmatched argument, and as
        // a mount missing its MOUNTPOINT); never in SUBCOMMANDS, so that `help COMMAND` has every command built;
        // ours, not picocli's, so that `help cache put` follows both names
        CommandLine help = new CommandLine(HelpCommand.class, factory);
        versioned(help);
        cl.addSubcommand(help);
        // System.out keeps a write's failure to itself (PrintStream): over the descriptor, a reader gone
        // (trace | head -1) is an error the writer's checkError() sees, as the JVM ignores SIGPIPE
        // (help, trace and stats write here; the vfs commands and cache put write terminal.out() itself)
        boolean real = terminal.out() == System.out || terminal.out() instanceof StandardOutput;
        OutputStream stdout = real ? new FileOutputStream(FileDescriptor.out) : terminal.out();
        cl.setOut(new PrintWriter(new OutputStreamWriter(stdout, StandardCharsets.UTF_8), true));
        cl.setErr(new PrintWriter(new OutputStreamWriter(terminal.err(), StandardCharsets.UTF_8), true));
        // an option's value may be an option's name (--content=--help, edit --old -h): text an agent edits
        // holds such words, and edit has no stdin to fall back on; set once every command is added
        cl.setAllowOptionsAsOptionParameters(true);
        cl.setExecutionExceptionHandler(new ErrorHandler());
        cl.setParameterExceptionHandler(new ErrorHandler());
        cl.setExecutionStrategy(parsed -> ConfigCheck.execute(parsed, terminal.env()));
        return cl;
    }

    /** Every command has -V (mixinStandardHelpOptions), which printed nothing without a provider of its own. */
    private static void versioned(CommandLine command) {
        command.getCommandSpec().versionProvider(new VersionProvider());
        command.getSubcommands().values().forEach(Main::versioned);
    }

    /** Builds commands with picocli's factory and hands the vfs commands, cache put and the cache commands' --home their terminal. */
    private static final class TerminalFactory implements CommandLine.IFactory {
        private final Terminal terminal;

        TerminalFactory(Terminal terminal) {
            this.terminal = terminal;
        }

        @Override
        public <K> K create(Class<K> cls) throws Exception {
            K made = CommandLine.defaultFactory().create(cls);
            if (made instanceof VfsCommand command) {
                command.terminal = terminal;
            } else if (made instanceof CachePutCommand put) {
                put.terminal = terminal;
            } else if (made instanceof HomeOption home) {
                home.env = terminal.env();
            }
            return made;
        }
    }

    /** The subcommand {@code args} name first, alone; every one when the first is none (an option, a typo, nothing). */
    static List<Class<?>> subcommandsFor(String[] args) {
        if (args.length > 0) {
            for (Class<?> c : SUBCOMMANDS) {
                if (c.getAnnotation(Command.class).name().equals(args[0])) {
                    return List.of(c);
                }
            }
        }
        return SUBCOMMANDS;
    }

    /** What every JVM of chibifs does first (ClassArchiveTraining's too, so its archive is made at any umask). */
    static void startUp() throws java.io.IOException {
        NativeStub.load(); // before any command's constructor reaches libc
        Umask.spareTheOwner(); // before anything is made: at a umask of 277 our own directories came out 0500
    }

    public static void main(String[] args) {
        DaemonLogLevel.preset(args); // before any class this command loads makes its logger
        OutOfMemory.endTheProcessWhereAnyThreadRunsOut();
        try {
            startUp();
        } catch (java.io.IOException e) {
            System.err.println(ErrorHandler.PREFIX + e.getMessage());
            System.exit(ExitCodes.FAILURE);
        }
        int code = run(Terminal.process(), args);
        // the mount command returns only when the daemon is done; exit explicitly so no stray thread keeps the JVM
        System.exit(code);
    }

    /** Runs the command {@code args} name on {@code terminal}; returns its exit code, {@link ExitCodes#OUT_OF_MEMORY} too. */
    static int run(Terminal terminal, String[] args) {
        try {
            return commandLine(terminal, subcommandsFor(args)).execute(args);
        } catch (OutOfMemoryError e) {
            // what filled the heap was the command's own, unreachable now that it has unwound
            return OutOfMemory.report(terminal.err());
        }
    }
}
