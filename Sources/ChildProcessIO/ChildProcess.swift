import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// Starting a program with `posix_spawn` and waiting for it with `waitpid`, written once for every module that runs
/// one (the clipboard's `wl-copy` and `xclip`, `passkey-bench`'s relays and workers). The child gets every signal at
/// its default and none blocked (a signal this process ignores, SIGINT while it waits, would otherwise stay ignored
/// in the child), this process's environment, and the standard files `SpawnedFiles` names; nothing else this process
/// opened with close-on-exec reaches it.
public enum ChildProcessSpawn {
    /// Where one of the child's standard files comes from.
    public enum Source: Sendable, Hashable {
        /// This process's own.
        case inherited
        /// `/dev/null`.
        case null
        /// A copy of this descriptor (a pipe's end); this process keeps its own.
        case descriptor(Int32)
        /// The file at this path, opened for appending and created (0644) when missing.
        case appending(String)
        /// The same file as the child's own descriptor 0, 1 or 2, once that one is set up.
        case sameAs(Int32)

        var isCopy: Bool {
            if case .sameAs = self { return true }
            return false
        }
    }

    /// The child's standard input, output and error.
    public struct SpawnedFiles: Sendable, Hashable {
        public var input: Source
        public var output: Source
        public var error: Source

        public init(input: Source = .inherited, output: Source = .inherited, error: Source = .inherited) {
            self.input = input
            self.output = output
            self.error = error
        }
    }

    /// Why a program did not start or a pipe could not be made, in a person's terms (`strerror`'s text).
    public struct Failure: Error, Sendable, Hashable, CustomStringConvertible {
        public var description: String

        public init(_ description: String) { self.description = description }
    }

    /// Starts `executable` (a path) with `arguments` (its `argv`, `argv[0]` included) and `files`; returns its pid.
    public static func start(executable: String, arguments: [String], files: SpawnedFiles) throws(Failure) -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        // `.sameAs` last, once the file it copies is in place.
        let sources = [(Int32(0), files.input), (1, files.output), (2, files.error)]
        for (target, source) in sources.filter({ !$0.1.isCopy }) + sources.filter(\.1.isCopy) {
            switch source {
            case .inherited: break
            case .null:
                posix_spawn_file_actions_addopen(&actions, target, "/dev/null", target == 0 ? O_RDONLY : O_WRONLY, 0)
            case .descriptor(let descriptor): posix_spawn_file_actions_adddup2(&actions, descriptor, target)
            case .appending(let path):
                posix_spawn_file_actions_addopen(&actions, target, path, O_WRONLY | O_CREAT | O_APPEND, 0o644)
            case .sameAs(let descriptor): posix_spawn_file_actions_adddup2(&actions, descriptor, target)
            }
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigfillset(&defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv = arguments.map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.map { strdup("\($0)=\($1)") } + [nil]
        defer { for pointer in argv + environment { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, executable, &actions, &attributes, argv, environment)
        guard result == 0 else { throw Failure("cannot start \(executable): \(String(cString: strerror(result)))") }
        return pid
    }

    /// A pipe whose two ends are close-on-exec, so that no child inherits them except as the standard file a
    /// `.descriptor` source makes of one: a reader sees the end of its input only when every write end is closed.
    public static func pipe() throws(Failure) -> (read: Int32, write: Int32) {
        var ends: [Int32] = [-1, -1]
        guard Glibc.pipe(&ends) == 0 else { throw Failure("cannot make a pipe: \(String(cString: strerror(errno)))") }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        return (ends[0], ends[1])
    }

    /// The child's wait status if it has ended (it is then reaped), nil while it runs. A child already reaped
    /// elsewhere (`ECHILD`) counts as ended with status 0.
    public static func poll(_ pid: pid_t) -> WaitStatus? {
        var status: Int32 = 0
        while true {
            let result = waitpid(pid, &status, WNOHANG)
            if result == pid { return WaitStatus(raw: status) }
            if result < 0 && errno == EINTR { continue }
            return result < 0 && errno == ECHILD ? WaitStatus(raw: 0) : nil
        }
    }

    /// Waits for the child until `deadline`; when it has not ended by then, kills it (SIGKILL), reaps it and
    /// returns nil.
    public static func wait(_ pid: pid_t, until deadline: ContinuousClock.Instant) -> WaitStatus? {
        while true {
            if let status = poll(pid) { return status }
            guard ContinuousClock.now < deadline else {
                kill(pid, SIGKILL)
                var status: Int32 = 0
                while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
                return nil
            }
            usleep(10_000)
        }
    }
}

/// A `waitpid` status.
public struct WaitStatus: Sendable, Hashable, CustomStringConvertible {
    public var raw: Int32

    public init(raw: Int32) { self.raw = raw }

    /// The exit status when the child exited, nil when a signal ended it.
    public var exitStatus: Int32? { raw & 0x7F == 0 ? (raw >> 8) & 0xFF : nil }

    /// The signal that ended the child, nil when it exited.
    public var signal: Int32? { raw & 0x7F == 0 ? nil : raw & 0x7F }

    /// "exit status N" or "signal N".
    public var description: String { exitStatus.map { "exit status \($0)" } ?? "signal \(signal ?? 0)" }
}
