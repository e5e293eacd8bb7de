import Basics
import Foundation

/// The desktop clipboard through the command the session offers: `wl-copy`/`wl-paste` (wl-clipboard) under Wayland,
/// `xclip` under X11. The text goes to the command's standard input, never its arguments, so no other user sees it
/// in the process list.
public struct ClipboardTool: Sendable, Hashable {
    /// Short name for messages: `wl-copy` or `xclip`.
    public var name: String
    /// The command that takes the clipboard's new text on standard input.
    public var copy: [String]
    /// The command that prints the clipboard's text.
    public var paste: [String]
    /// The command that empties the clipboard.
    public var clear: [String]

    /// wl-clipboard's commands, found at `copy` and `paste`.
    public static func wayland(copy: String, paste: String) -> ClipboardTool {
        ClipboardTool(
            name: "wl-copy", copy: [copy, "--type", "text/plain;charset=utf-8"], paste: [paste, "--no-newline"],
            clear: [copy, "--clear"])
    }

    /// xclip's commands on the CLIPBOARD selection (the one Ctrl-V pastes), found at `path`.
    public static func x11(_ path: String) -> ClipboardTool {
        ClipboardTool(
            name: "xclip", copy: [path, "-selection", "clipboard", "-in"],
            paste: [path, "-selection", "clipboard", "-out"], clear: [path, "-selection", "clipboard", "-in"])
    }

    /// The tool for the session `environment` describes: Wayland's when `WAYLAND_DISPLAY` is set and wl-clipboard is
    /// installed, else X11's when `DISPLAY` is set and xclip is; `find` looks a command up on the `PATH`.
    public static func choose(
        environment: [String: String], find: (String) -> String? = { ClipboardTool.find($0, environment: nil) }
    ) throws(ProviderError) -> ClipboardTool {
        let wayland = !(environment["WAYLAND_DISPLAY"] ?? "").isEmpty
        let x11 = !(environment["DISPLAY"] ?? "").isEmpty
        if wayland, let copy = find("wl-copy"), let paste = find("wl-paste") {
            return .wayland(copy: copy, paste: paste)
        }
        if x11, let xclip = find("xclip") { return .x11(xclip) }
        switch (wayland, x11) {
        case (false, false):
            throw ProviderError(
                "cannot copy to the clipboard: no desktop session (neither WAYLAND_DISPLAY nor DISPLAY is set)",
                hint: "Run it in your desktop session, or leave out --clip to print the password.")
        case (true, _):
            throw ProviderError(
                "cannot copy to the clipboard: wl-copy is not installed",
                hint: "Install wl-clipboard (Debian: apt install wl-clipboard).")
        case (false, true):
            throw ProviderError(
                "cannot copy to the clipboard: xclip is not installed",
                hint: "Install xclip (Debian: apt install xclip).")
        }
    }

    /// The first executable called `command` on `environment`'s `PATH` (this process's when nil).
    public static func find(_ command: String, environment: [String: String]?) -> String? {
        let path = (environment ?? ProcessInfo.processInfo.environment)["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") where !directory.isEmpty {
            let candidate = "\(directory)/\(command)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }
}

/// Puts a secret on the clipboard and takes it off again, leaving alone whatever the person copied since.
public struct Clipboard: Sendable {
    public var tool: ClipboardTool
    /// How long one command may take before it counts as failed.
    public var commandLimit: Duration

    public init(tool: ClipboardTool, commandLimit: Duration = .seconds(5)) {
        self.tool = tool
        self.commandLimit = commandLimit
    }

    /// Copies `text` to the clipboard.
    public func copy(_ text: String) throws(ProviderError) {
        guard try run(tool.copy, input: Array(text.utf8)).status == 0 else {
            throw ProviderError("cannot copy to the clipboard: \(tool.name) failed")
        }
    }

    /// Whether the clipboard holds `text` now, compared in constant time.
    public func holds(_ text: String) throws(ProviderError) -> Bool {
        let result = try run(tool.paste, input: nil)
        return result.status == 0 && constantTimeEqual(result.output, Array(text.utf8))
    }

    /// Empties the clipboard if it still holds `text`: whether it did.
    @discardableResult
    public func clear(ifHolding text: String) throws(ProviderError) -> Bool {
        guard try holds(text) else { return false }
        guard try run(tool.clear, input: []).status == 0 else {
            throw ProviderError("cannot clear the clipboard: \(tool.name) failed")
        }
        return true
    }

    private struct Outcome {
        var status: Int32
        var output: [UInt8]
    }

    /// Runs `command`, writing `input` to its standard input (none: /dev/null) or, when `input` is nil, reading its
    /// output. The copying commands fork a process that stays behind to serve the clipboard, holding whatever it
    /// inherited: so the pipes are close-on-exec, as are the process's other files (SQLite's, NIO's), and the command's end is seen by
    /// `waitpid`, not by the end of a pipe the stayer would keep open.
    private func run(_ command: [String], input: [UInt8]?) throws(ProviderError) -> Outcome {
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else { throw ProviderError("cannot run \(tool.name)") }
        let (readEnd, writeEnd) = (pipeEnds[0], pipeEnds[1])
        // Close-on-exec: the child keeps only the copy dup2 gives it.
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        if input != nil {
            posix_spawn_file_actions_adddup2(&actions, readEnd, 0)
            posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        } else {
            posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
            posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        }
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // Signals this process ignores (SIGINT while it waits) would stay ignored in the child.
        var defaults = sigset_t()
        sigfillset(&defaults)
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setsigmask(&attributes, &mask)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))
        let argv = command.map { strdup($0) } + [nil]
        let environment = ProcessInfo.processInfo.environment.map { strdup("\($0)=\($1)") } + [nil]
        defer { for pointer in argv + environment { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, command[0], &actions, &attributes, argv, environment)
        let (ours, theirs) = input != nil ? (writeEnd, readEnd) : (readEnd, writeEnd)
        close(theirs)
        var open = true
        defer { if open { close(ours) } }
        guard spawned == 0 else { throw ProviderError("cannot run \(tool.name)") }

        let deadline = ContinuousClock.now + commandLimit
        var output: [UInt8] = []
        if let input {
            _ = signal(SIGPIPE, SIG_IGN)
            var written = 0
            while written < input.count {
                let result = input[written...].withUnsafeBytes { write(ours, $0.baseAddress, $0.count) }
                guard result > 0 else { break }
                written += result
            }
            close(ours)
            open = false
        } else {
            // Read to the end or the deadline: a command that writes more than a pipe holds must not stall.
            var buffer = [UInt8](repeating: 0, count: 1 << 16)
            while ContinuousClock.now < deadline, output.count <= 1 << 20 {
                var poller = pollfd(fd: ours, events: Int16(POLLIN), revents: 0)
                guard poll(&poller, 1, 50) >= 0 else { break }
                guard poller.revents != 0 else { continue }
                let count = read(ours, &buffer, buffer.count)
                guard count > 0 else { break }
                output += buffer[..<count]
            }
        }
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            guard reaped == 0, ContinuousClock.now < deadline else {
                kill(pid, SIGKILL)
                _ = waitpid(pid, &status, 0)
                throw ProviderError("cannot use the clipboard: \(tool.name) did not finish in time")
            }
            usleep(10_000)
        }
        // Exited normally: its status; killed by a signal: a failure.
        let exited = status & 0x7f == 0
        return Outcome(status: exited ? (status >> 8) & 0xff : -1, output: output)
    }
}
