import Basics
import Foundation
import PasskeyFilesIO

/// A file named on the command line, or standard input for `-`, read with a limit so that no input can make a command
/// hold more than it will use.
public enum CommandInput {
    /// Why the input could not be read: one line naming the file.
    public struct ReadError: Error, Hashable, CustomStringConvertible {
        public var description: String
    }

    /// At most `limit + 1` bytes of `path` (standard input for `-`): one more than the limit, so that the caller can
    /// tell a text that is too long from one that is exactly long enough, and say so in its own terms.
    public static func read(_ path: String, limit: Int, what: String) throws(ReadError) -> [UInt8] {
        let handle: FileHandle
        if path == "-" {
            handle = FileHandle.standardInput
        } else {
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue,
                let opened = FileHandle(forReadingAtPath: path)
            else {
                throw ReadError(
                    description: "cannot read the \(what) \(path.terminalSafe): \(UnreadableFile.reason(path))")
            }
            handle = opened
        }
        defer { if path != "-" { try? handle.close() } }
        var bytes: [UInt8] = []
        while bytes.count <= limit {
            guard let chunk = try? handle.read(upToCount: min(64 * 1024, limit + 1 - bytes.count)), !chunk.isEmpty
            else { break }
            bytes += chunk
        }
        return bytes
    }

    /// All of `path` when it is at most `limit` bytes; a clear error when it is longer.
    public static func readWhole(_ path: String, limit: Int, what: String) throws(ReadError) -> [UInt8] {
        let bytes = try read(path, limit: limit, what: what)
        guard bytes.count <= limit else {
            throw ReadError(description: "the \(what) \(path.terminalSafe) is larger than \(limit) bytes")
        }
        return bytes
    }
}
