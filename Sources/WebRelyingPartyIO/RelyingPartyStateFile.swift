import Foundation
import PasskeyFilesIO
import RelyingParty

extension RelyingPartyState {
    /// Reads the file (`PasskeyFiles.relyingPartyState` by default) through `OwnerOnlyFile`; a missing file is an
    /// empty state. Anything unreadable is an error naming the file.
    public static func load(from url: URL) throws(RelyingPartyStateError) -> RelyingPartyState {
        let bytes: [UInt8]
        do {
            guard let read = try OwnerOnlyFile.read(url, limit: maximumFileSize) else { return RelyingPartyState() }
            bytes = read
        } catch {
            throw RelyingPartyStateError(
                .unreadable, "cannot read the relying party state \(url.path): \(error.reason)")
        }
        return try RelyingPartyState(jsonData: Data(bytes), source: url.path)
    }

    /// Writes the file atomically and durably, 0600 (`OwnerOnlyFile.write`).
    public func save(to url: URL) throws(RelyingPartyStateError) {
        let data = try jsonData()
        do {
            try OwnerOnlyFile.write([UInt8](data), to: url)
        } catch {
            throw RelyingPartyStateError(
                .unwritable, "cannot save the relying party state \(url.path): \(error.reason)")
        }
    }
}
