import Basics
import Foundation

/// What a failed command prints on standard error, the same for every command: one line,
/// `passkey: <what failed>: <why>`, in the person's terms, with what they can do about it in parentheses when
/// something useful can be said. The underlying detail (a library's own description, which may name its types,
/// errno values or source paths) is printed only with `--verbose`, on a second line.
public struct ErrorLine: Hashable, Sendable {
    /// What failed and why, one sentence without a trailing period.
    public var message: String
    /// What the person can do about it.
    public var hint: String?
    /// The underlying detail, for `--verbose`.
    public var detail: String?

    public init(_ message: String, hint: String? = nil, detail: String? = nil) {
        self.message = message
        self.hint = hint
        self.detail = detail
    }

    /// The text written to standard error, ending in a line break: every part terminal-safe and folded onto its
    /// line (a line break inside a part becomes `; `).
    public func rendered(verbose: Bool = false) -> String {
        var line = "passkey: " + Self.folded(message)
        if let hint, !hint.isEmpty {
            var text = Self.folded(hint)
            if text.hasSuffix(".") { text.removeLast() }
            line += " (" + text.prefix(1).lowercased() + text.dropFirst() + ")"
        }
        line += "\n"
        if verbose, let detail, !detail.isEmpty { line += "passkey: detail: " + Self.folded(detail) + "\n" }
        return line
    }

    /// A usage error as ArgumentParser words it (`Error: Missing expected argument '<file>'`, with `Help:` and
    /// `Usage:` lines after it): its first line without the `Error: ` prefix, and where to read about the command.
    public static func usage(_ parserMessage: String, helpCommand: String?) -> ErrorLine {
        let first =
            parserMessage.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .first { !$0.isEmpty } ?? "the arguments are wrong"
        var message = first.hasPrefix("Error: ") ? String(first.dropFirst("Error: ".count)) : first
        if message.hasSuffix(".") { message.removeLast() }
        message = message.prefix(1).lowercased() + message.dropFirst()
        return ErrorLine(message, hint: helpCommand.map { "See `\($0) --help`" })
    }

    /// The command `See 'passkey delete --help' for more information.` in ArgumentParser's full message names.
    public static func helpCommand(inParserMessage text: String) -> String? {
        guard let start = text.range(of: "See '"), let end = text[start.upperBound...].range(of: " --help'") else {
            return nil
        }
        return String(text[start.upperBound..<end.lowerBound])
    }

    /// The line for an error no command put into words. This package's own errors are written for people
    /// (`SecurityKeyError`, `QRImageError`, …): their description is the line. A library's (the standard library,
    /// Foundation, NIO, TLS, HTTP, the parser) says only that `command` failed; its own description, which may
    /// name its types, errno values or source paths, is the detail.
    public static func unexplained(_ error: any Error, command: String) -> ErrorLine {
        guard let module = ownModule(of: error) else {
            return ErrorLine(
                "\(command) failed", hint: "Run it again with -v for the details", detail: String(reflecting: error))
        }
        return ErrorLine(String(describing: error), detail: "from \(module)")
    }

    /// The module of `error`'s type when it is one of this package's; nil for the standard library's, Foundation's
    /// and the dependencies'.
    public static func ownModule(of error: any Error) -> String? {
        let module = String(String(reflecting: type(of: error)).prefix { $0 != "." })
        let foreign: Set<String> = [
            "Swift", "Foundation", "FoundationEssentials", "CoreFoundation", "Dispatch", "Glibc", "ArgumentParser",
            "AsyncHTTPClient", "Crypto", "Logging", "TOMLKit", "Synchronization",
        ]
        guard !foreign.contains(module), !module.hasPrefix("NIO"), !module.hasPrefix("_") else { return nil }
        return module
    }

    static func folded(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }.joined(separator: "; ").terminalSafe
    }
}
