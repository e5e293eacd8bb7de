import Basics
import CBOR
import Foundation
import PasskeyFilesIO
import Hybrid

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A phone this computer may reach without a QR code: the linking information it sent (verified when it was
/// received), the relay it was reached through, and when.
public struct LinkedPhone: Hashable, Sendable {
    /// The phone's name (linking information key 5); how `--phone NAME` finds it. Unique within the book.
    public var name: String
    /// The relay that wakes it (`ws[s]://host[:port]`).
    public var relay: TunnelServerBaseURL
    public var linking: LinkingInfo
    public var created: Date
    public var lastUsed: Date?

    public init(name: String, relay: TunnelServerBaseURL, linking: LinkingInfo, created: Date, lastUsed: Date? = nil) {
        self.name = name
        self.relay = relay
        self.linking = linking
        self.created = created
        self.lastUsed = lastUsed
    }
}

/// Why the linked phones could not be read or written.
public struct LinkedPhoneBookError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The computer's linked phones, kept as one JSON document (version 1) in a ``Storage``: the provider seals it under
/// the passkey store's key (`ComputerLinkFile`, `passkeys.computer-links.sealed`), so that the link secrets and
/// contact IDs, which let anyone wake the phone, are never on disk in clear. Earlier versions kept the same document
/// in clear in `links.json`; ``clearFile(_:)`` reads such a file once, to move its links into the sealed one.
/// `passkey client links remove NAME` deletes one.
public struct LinkedPhoneBook: Sendable {
    /// Where the document is read and written: whole, atomically.
    public struct Storage: Sendable {
        /// The file, for messages.
        public var path: String
        /// The document, or nil when there is none yet.
        public var read: @Sendable () throws(LinkedPhoneBookError) -> [UInt8]?
        public var write: @Sendable ([UInt8]) throws(LinkedPhoneBookError) -> Void

        public init(
            path: String, read: @escaping @Sendable () throws(LinkedPhoneBookError) -> [UInt8]?,
            write: @escaping @Sendable ([UInt8]) throws(LinkedPhoneBookError) -> Void
        ) {
            self.path = path
            self.read = read
            self.write = write
        }
    }

    public let storage: Storage

    public init(storage: Storage) { self.storage = storage }

    /// A document in clear in an owner-only file: the `links.json` of earlier versions (and tests).
    public static func clearFile(_ url: URL) -> Storage {
        Storage(
            path: url.path,
            read: { () throws(LinkedPhoneBookError) in
                do throws(OwnerOnlyFileError) {
                    return try OwnerOnlyFile.read(url, limit: 4 << 20)
                } catch {
                    throw LinkedPhoneBookError("the links file \(url.path) cannot be read: \(error.reason)")
                }
            },
            write: { (bytes) throws(LinkedPhoneBookError) in
                do {
                    try OwnerOnlyFile.write(bytes, to: url)
                } catch {
                    throw LinkedPhoneBookError("cannot write the links file \(error)")
                }
            })
    }

    private struct FileContents: Codable {
        var version: Int
        var links: [Entry]

        struct Entry: Codable {
            var name: String
            var relay: String
            var contactID: String
            var linkID: String
            var linkSecret: String
            var publicKey: String
            var signature: String
            var created: Date
            var lastUsed: Date?
        }
    }

    /// Every link, in the order they were made; no document is none.
    public func load() throws(LinkedPhoneBookError) -> [LinkedPhone] {
        guard let bytes = try storage.read() else { return [] }
        return try Self.decode(bytes, path: storage.path)
    }

    /// The links a document holds; `path` names it in errors.
    public static func decode(_ bytes: [UInt8], path: String) throws(LinkedPhoneBookError) -> [LinkedPhone] {
        let contents: FileContents
        do {
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            contents = try decoder.decode(FileContents.self, from: Data(bytes))
        } catch {
            throw LinkedPhoneBookError("the linked phones in \(path) cannot be read: \(error)")
        }
        guard contents.version == 1 else {
            throw LinkedPhoneBookError("the linked phones in \(path) have version \(contents.version), not 1")
        }
        return try contents.links.map { entry throws(LinkedPhoneBookError) in
            guard let relay = try? TunnelServerBaseURL(string: entry.relay),
                let contactID = [UInt8](base64URLEncoded: entry.contactID),
                let linkID = [UInt8](base64URLEncoded: entry.linkID),
                let secret = [UInt8](base64URLEncoded: entry.linkSecret),
                let publicKey = [UInt8](base64URLEncoded: entry.publicKey),
                let signature = [UInt8](base64URLEncoded: entry.signature),
                let linking = try? LinkingInfo(
                    cbor: LinkingInfo.cborMap(
                        contactID: contactID, linkID: linkID, linkSecret: secret, publicKey: publicKey,
                        name: entry.name, signature: signature))
            else { throw LinkedPhoneBookError("the linked phones in \(path) hold a malformed link (\(entry.name))") }
            return LinkedPhone(
                name: entry.name, relay: relay, linking: linking, created: entry.created, lastUsed: entry.lastUsed)
        }
    }

    /// The document that holds `links`.
    public static func encode(_ links: [LinkedPhone]) throws(LinkedPhoneBookError) -> [UInt8] {
        let contents = FileContents(
            version: 1,
            links: links.map { link in
                .init(
                    name: link.name, relay: link.relay.string,
                    contactID: link.linking.contactID.base64URLEncodedString,
                    linkID: link.linking.linkID.base64URLEncodedString,
                    linkSecret: link.linking.linkSecret.base64URLEncodedString,
                    publicKey: link.linking.authenticatorPublicKey.base64URLEncodedString,
                    signature: link.linking.signature.base64URLEncodedString, created: link.created,
                    lastUsed: link.lastUsed)
            })
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        do {
            return [UInt8](try encoder.encode(contents))
        } catch {
            throw LinkedPhoneBookError("cannot encode the links: \(error)")
        }
    }

    /// Writes `links`, replacing the whole document.
    public func save(_ links: [LinkedPhone]) throws(LinkedPhoneBookError) {
        try storage.write(try Self.encode(links))
    }

    /// Adds `links` that the book does not have yet (no link to the same phone, by identity key, nor by name), after
    /// the ones it has; the book's own win. Returns how many were added.
    @discardableResult
    public func merge(_ links: [LinkedPhone]) throws(LinkedPhoneBookError) -> Int {
        var current = try load()
        var added = 0
        for link in links
        where !current.contains(where: {
            $0.linking.authenticatorPublicKey == link.linking.authenticatorPublicKey || $0.name == link.name
        }) {
            current.append(link)
            added += 1
        }
        try save(current)
        return added
    }

    /// Adds the link a phone sent, replacing an earlier link with the same phone (same identity key) or, failing
    /// that, the same name. Returns the name it is stored under.
    @discardableResult
    public func remember(_ linking: LinkingInfo, relay: TunnelServerBaseURL, now: Date) throws(LinkedPhoneBookError)
        -> String
    {
        var links = try load()
        let name = linking.name.isEmpty ? "phone" : linking.name
        links.removeAll { $0.linking.authenticatorPublicKey == linking.authenticatorPublicKey || $0.name == name }
        links.append(LinkedPhone(name: name, relay: relay, linking: linking, created: now))
        try save(links)
        return name
    }

    /// Removes the link called `name`; false when there is none.
    @discardableResult
    public func forget(_ name: String) throws(LinkedPhoneBookError) -> Bool {
        var links = try load()
        let before = links.count
        links.removeAll { $0.name == name }
        guard links.count != before else { return false }
        try save(links)
        return true
    }

    /// Records a use of the link called `name`.
    public func used(_ name: String, now: Date) throws(LinkedPhoneBookError) {
        var links = try load()
        guard let index = links.firstIndex(where: { $0.name == name }) else { return }
        links[index].lastUsed = now
        try save(links)
    }

}

extension LinkingInfo {
    /// The linking map with these fields, to read a stored link back through the parser's checks.
    static func cborMap(
        contactID: [UInt8], linkID: [UInt8], linkSecret: [UInt8], publicKey: [UInt8], name: String,
        signature: [UInt8]
    ) -> CBORValue {
        .map([
            1: .bytes(contactID), 2: .bytes(linkID), 3: .bytes(linkSecret), 4: .bytes(publicKey), 5: .text(name),
            6: .bytes(signature),
        ])
    }
}
