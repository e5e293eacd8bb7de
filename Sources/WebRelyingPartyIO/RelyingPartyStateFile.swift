import Foundation
import RelyingParty

extension RelyingPartyState {
    /// Reads the file; a missing file is an empty state. Anything unreadable is an error naming the file.
    public static func load(from url: URL) throws(RelyingPartyStateError) -> RelyingPartyState {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch let error as CocoaError where error.code == .fileReadNoSuchFile {
            return RelyingPartyState()
        } catch {
            throw RelyingPartyStateError(
                .unreadable, "cannot read the relying party state \(url.path): \(error.localizedDescription)")
        }
        return try RelyingPartyState(jsonData: data, source: url.path)
    }

    /// Writes the file atomically: a 0600 temporary file beside it, renamed over it.
    public func save(to url: URL) throws(RelyingPartyStateError) {
        let data = try jsonData()
        do {
            let directory = url.deletingLastPathComponent()
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
            guard
                FileManager.default.createFile(
                    atPath: temporary.path, contents: data, attributes: [.posixPermissions: 0o600])
            else {
                throw RelyingPartyStateError(.unwritable, "cannot write \(temporary.path)")
            }
            guard rename(temporary.path, url.path) == 0 else {
                let reason = String(cString: strerror(errno))
                try? FileManager.default.removeItem(at: temporary)
                throw RelyingPartyStateError(.unwritable, "cannot replace \(url.path): \(reason)")
            }
        } catch let error as RelyingPartyStateError {
            throw error
        } catch {
            throw RelyingPartyStateError(
                .unwritable, "cannot save the relying party state \(url.path): \(error.localizedDescription)")
        }
    }
}
