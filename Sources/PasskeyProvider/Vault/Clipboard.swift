import Basics
import ChildProcessIO
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
    /// inherited: so the pipes are close-on-exec, as are the process's other files (SQLite's, NIO's), and the
    /// command's end is seen by `waitpid`, not by the end of a pipe the stayer would keep open.
    private func run(_ command: [String], input: [UInt8]?) throws(ProviderError) -> Outcome {
        let ends: (read: Int32, write: Int32)
        do throws(ChildProcessSpawn.Failure) {
            ends = try ChildProcessSpawn.pipe()
        } catch {
            throw ProviderError("cannot run \(tool.name): \(error)")
        }
        let (ours, theirs) = input != nil ? (ends.write, ends.read) : (ends.read, ends.write)
        let files =
            input != nil
            ? ChildProcessSpawn.SpawnedFiles(input: .descriptor(theirs), output: .null, error: .null)
            : ChildProcessSpawn.SpawnedFiles(input: .null, output: .descriptor(theirs), error: .null)
        let started = Result { () throws(ChildProcessSpawn.Failure) in
            try ChildProcessSpawn.start(executable: command[0], arguments: command, files: files)
        }
        close(theirs)
        var open = true
        defer { if open { close(ours) } }
        guard case .success(let pid) = started else { throw ProviderError("cannot run \(tool.name)") }

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
        guard let status = ChildProcessSpawn.wait(pid, until: deadline) else {
            throw ProviderError("cannot use the clipboard: \(tool.name) did not finish in time")
        }
        // Exited normally: its status; killed by a signal: a failure.
        return Outcome(status: status.exitStatus ?? -1, output: output)
    }
}
