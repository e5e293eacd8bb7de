import WebAuthnClientDriver
import Foundation
import Hybrid
import PasskeyFilesIO

/// The computer's linked phones (`PasskeyFiles.computerLinks`, or the file `--links` names): the phones it reaches
/// without a QR code, and the policy of when one is kept and when it goes.
///
/// A phone is remembered only once it sent linking information (after a QR session that offered linking), and
/// forgotten when its relay says the link is gone (HTTP 410, or WebSocket close code 4410): the phone revoked it,
/// and asking again would only fail again.
public struct ComputerLinks: Sendable {
    public let book: LinkedPhoneBook
    public let interface: any ProviderUserInterface
    /// The clock for when a link was made and last used.
    public let now: @Sendable () -> Date

    /// The links beside `files`' store, or in `file` when the command names one.
    public init(
        files: PasskeyFiles, file: URL? = nil, interface: any ProviderUserInterface,
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.book = LinkedPhoneBook(url: file ?? files.computerLinks)
        self.interface = interface
        self.now = now
    }

    public var url: URL { book.url }

    /// Every linked phone, in the order they were linked; none when the file does not exist.
    public func phones() throws(ProviderError) -> [LinkedPhone] {
        do {
            return try book.load()
        } catch {
            throw ProviderError(error.description)
        }
    }

    /// The linked phone called `name`, for `--linked NAME`; the error says how to link one or which exist.
    public func phone(named name: String) throws(ProviderError) -> LinkedPhone {
        let phones = try phones()
        guard let phone = phones.first(where: { $0.name == name }) else {
            throw ProviderError(
                "no linked phone called \(name) in \(url.path)",
                hint: phones.isEmpty
                    ? "Link one: a QR session with --link, answered by `passkey scan --link`."
                    : "Linked phones: " + phones.map(\.name).joined(separator: ", "))
        }
        return phone
    }

    /// Forgets the phone called `name` (`passkey client links --remove`).
    public func remove(named name: String) throws(ProviderError) {
        let forgotten: Bool
        do {
            forgotten = try book.forget(name)
        } catch {
            throw ProviderError(error.description)
        }
        guard forgotten else { throw ProviderError("no linked phone called \(name)") }
    }

    /// Keeps what a phone sent at the end of a QR session. A file that cannot be written is reported, not thrown:
    /// the ceremony itself succeeded.
    public func remember(_ linking: LinkingInfo, relay: TunnelServerBaseURL) {
        do {
            let name = try book.remember(linking, relay: relay, now: now())
            interface.report(.computer(.phoneRemembered(name: name, file: url.path)))
        } catch {
            interface.report(.computer(.linkNotSaved(reason: error.description)))
        }
    }

    /// The relay said the phone revoked the link called `name`: forget it, and say so.
    public func gone(_ name: String) {
        _ = try? book.forget(name)
        interface.report(.computer(.linkRevoked(name: name, file: url.path)))
    }

    /// The link called `name` reached its phone: record the use (best effort; the session goes on).
    public func used(_ name: String) {
        try? book.used(name, now: now())
    }
}
