import Basics
import Foundation
import PublicSuffix

/// The public suffix list file the client reads: `PASSKEY_PUBLIC_SUFFIX_LIST` if set, else Debian's `publicsuffix`
/// package's copy. The file is parsed in Swift (`PublicSuffix`), not through libpsl: see Docs/Client.md.
public enum PublicSuffixListFile {
    /// The environment variable that names another list file.
    public static let environmentVariable = "PASSKEY_PUBLIC_SUFFIX_LIST"
    /// Where Debian's `publicsuffix` package installs the list.
    public static let systemPath = "/usr/share/publicsuffix/public_suffix_list.dat"
    /// The largest file read: the list is about 250 KB; anything near this size is not the list.
    public static let maximumSize = 16 * 1024 * 1024

    /// The path to read: the environment variable's value when it is set and not empty, else ``systemPath``.
    public static func path(environment: [String: String]) -> String {
        if let path = environment[environmentVariable], !path.isEmpty { return path }
        return systemPath
    }

    /// Reads and parses the list ``path(environment:)`` names.
    public static func load(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) throws(PublicSuffixListFileError) -> PublicSuffixList {
        let path = path(environment: environment)
        let hint =
            environment[environmentVariable].map { _ in " (named by \(environmentVariable))" }
            ?? ": install Debian's publicsuffix package, or set \(environmentVariable) to a list file"
        return try load(path: path, hint: hint)
    }

    /// Reads and parses the list at `path`; `hint` ends the message when there is no file.
    public static func load(path: String, hint: String = "") throws(PublicSuffixListFileError) -> PublicSuffixList {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw PublicSuffixListFileError(.missing, "no public suffix list at \(path)\(hint)")
        }
        guard !isDirectory.boolValue else {
            throw PublicSuffixListFileError(.unreadable, "the public suffix list \(path) is a directory, not a file")
        }
        let data: Data
        do {
            let handle = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
            defer { try? handle.close() }
            data = try handle.read(upToCount: maximumSize + 1) ?? Data()
        } catch {
            throw PublicSuffixListFileError(
                .unreadable, "cannot read the public suffix list \(path): \(error.localizedDescription)")
        }
        guard data.count <= maximumSize else {
            throw PublicSuffixListFileError(
                .tooLarge, "the public suffix list \(path) is over \(maximumSize / 1024 / 1024) MiB: it is not the list"
            )
        }
        do {
            return try PublicSuffixList(bytes: data)
        } catch {
            throw PublicSuffixListFileError(.invalid, "the public suffix list \(path) is not valid: \(error)")
        }
    }
}

/// Why the list file could not be used. `code` is stable; `description` names the file and the reason.
public struct PublicSuffixListFileError: CodedError {
    /// A stable identifier for each kind of failure.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// There is no file at the path.
        case missing
        /// The path is a directory, or the file cannot be opened or read.
        case unreadable
        /// The file is larger than ``PublicSuffixListFile/maximumSize``.
        case tooLarge
        /// The file is not a public suffix list (``PublicSuffixListError``).
        case invalid
    }

    /// The kind of failure.
    public var code: Code
    /// One line for people, naming the file.
    public var description: String

    public init(_ code: Code, _ description: String) {
        self.code = code
        self.description = description
    }
}
