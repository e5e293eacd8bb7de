import Basics
import CBOR
import Foundation
import Hybrid

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// A phone this computer may reach without a QR code: the linking information it sent (verified when it was
/// received), the relay it was reached through, and when.
public struct LinkedPhone: Hashable, Sendable {
    /// The phone's name (linking information key 5); how `--linked NAME` finds it. Unique within the book.
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

/// Why the links file could not be read or written.
public struct LinkedPhoneBookError: Error, Hashable, Sendable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// The computer's linked phones: `links.json` beside the passkey store, mode 0600, replaced atomically.
///
/// The link secrets in it are **not encrypted**: the computer side has no passphrase-protected store to seal them
/// with (the passkey store is the authenticator's, and `passkey client` works without one). They are protected as
/// browsers protect their own linking information (Chromium keeps it in its profile's preferences, readable by the
/// user): by the file's owner-only permissions. Anyone who can read the file can wake the phone and run the
/// handshake's first half, but still needs the phone near (the advert) and its user's approval for every request.
/// `passkey client links --remove NAME` deletes one.
public struct LinkedPhoneBook: Sendable {
    public let url: URL

    public init(url: URL) { self.url = url }

    /// `links.json` beside the store at `storeURL`.
    public static func defaultURL(storeURL: URL) -> URL {
        storeURL.deletingLastPathComponent().appendingPathComponent("links.json")
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

    /// Every link, in the order they were made; an absent file is none.
    public func load() throws(LinkedPhoneBookError) -> [LinkedPhone] {
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        let contents: FileContents
        do {
            let data = try Data(contentsOf: url)
            guard data.count <= 4 << 20 else { throw LinkedPhoneBookError("larger than 4 MiB") }
            let decoder = JSONDecoder()
            decoder.dateDecodingStrategy = .iso8601
            contents = try decoder.decode(FileContents.self, from: data)
        } catch {
            throw LinkedPhoneBookError("the links file \(url.path) cannot be read: \(error)")
        }
        guard contents.version == 1 else {
            throw LinkedPhoneBookError("the links file \(url.path) has version \(contents.version), not 1")
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
            else { throw LinkedPhoneBookError("the links file \(url.path) holds a malformed link (\(entry.name))") }
            return LinkedPhone(
                name: entry.name, relay: relay, linking: linking, created: entry.created, lastUsed: entry.lastUsed)
        }
    }

    /// Writes `links` (0600, atomically).
    public func save(_ links: [LinkedPhone]) throws(LinkedPhoneBookError) {
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
        let data: Data
        do {
            data = try encoder.encode(contents)
        } catch {
            throw LinkedPhoneBookError("cannot encode the links: \(error)")
        }
        let directory = url.deletingLastPathComponent().path
        try? FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let temporary = url.path + ".tmp-\(getpid())"
        let descriptor = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard descriptor >= 0 else { throw LinkedPhoneBookError("cannot create \(temporary): \(Self.lastError)") }
        var failed = fchmod(descriptor, 0o600) != 0
        let bytes = [UInt8](data)
        var written = 0
        while !failed, written < bytes.count {
            let count = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress! + written, $0.count - written) }
            if count < 0 {
                if errno == EINTR { continue }
                failed = true
            } else {
                written += count
            }
        }
        if !failed { failed = fsync(descriptor) != 0 }
        close(descriptor)
        guard !failed, rename(temporary, url.path) == 0 else {
            let reason = Self.lastError
            unlink(temporary)
            throw LinkedPhoneBookError("cannot write the links file \(url.path): \(reason)")
        }
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

    private static var lastError: String { String(cString: strerror(errno)) }
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
