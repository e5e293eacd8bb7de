import WebAuthnClientDriver
import Foundation
import Hybrid
import SecurityKeyDriver
import WebAuthnClient

/// What a browser command asked to be offered: which authenticators the WebAuthn engine may choose among.
public struct BrowserAuthenticators: Hashable, Sendable {
    /// How a phone is reached, if at all.
    public enum Phone: Hashable, Sendable {
        /// No phone (`--no-phone`).
        case notOffered
        /// A phone by QR code; `link` offers it to remember this computer (`--link`).
        case qrCode(link: Bool)
        /// The linked phone with this name, through its relay and without a QR code (`--phone NAME`).
        case linked(name: String)
    }

    /// This computer's passkey store (offered only when it exists).
    public var thisComputer: Bool
    public var phone: Phone
    /// A security key over CTAPHID (`--security-key`).
    public var securityKey: SecurityKeySpec?

    public init(thisComputer: Bool, phone: Phone, securityKey: SecurityKeySpec? = nil) {
        self.thisComputer = thisComputer
        self.phone = phone
        self.securityKey = securityKey
    }
}

/// How each kind of authenticator is made: the radio, the relay's TLS and the terminal's progress lines are the
/// executable's, so the service decides *which* authenticators exist and how links are kept without owning any
/// transport. Tests give fakes.
public struct BrowserAuthenticatorFactory: Sendable {
    public typealias OnLinking = @Sendable (LinkingInfo, TunnelServerBaseURL) -> Void

    /// This computer's passkey store as the platform authenticator.
    public var thisComputer: @Sendable () throws -> any ClientAuthenticator
    /// A phone by QR code; `onLinking`, when set, offers linking and receives what the phone sent.
    public var phone: @Sendable (_ onLinking: OnLinking?) throws -> any ClientAuthenticator
    /// A linked phone; `onGone` when its relay says the link was revoked, `onUsed` once it is reached.
    public var linkedPhone:
        @Sendable (
            _ phone: LinkedPhone, _ onGone: @escaping @Sendable () -> Void, _ onUsed: @escaping @Sendable () -> Void
        ) throws -> any ClientAuthenticator
    public var securityKey: @Sendable (SecurityKeySpec) throws -> any ClientAuthenticator

    public init(
        thisComputer: @escaping @Sendable () throws -> any ClientAuthenticator,
        phone: @escaping @Sendable (_ onLinking: OnLinking?) throws -> any ClientAuthenticator,
        linkedPhone:
            @escaping @Sendable (
                _ phone: LinkedPhone, _ onGone: @escaping @Sendable () -> Void,
                _ onUsed: @escaping @Sendable () -> Void
            ) throws -> any ClientAuthenticator,
        securityKey: @escaping @Sendable (SecurityKeySpec) throws -> any ClientAuthenticator
    ) {
        self.thisComputer = thisComputer
        self.phone = phone
        self.linkedPhone = linkedPhone
        self.securityKey = securityKey
    }
}

/// The computer (browser) role: `passkey client create/get/register/sign-in`. It assembles the WebAuthn engine's
/// authenticators from what the command asked, and keeps the computer's linked phones: one is remembered only when
/// a phone sent linking information, and forgotten when its relay says the link is gone.
///
/// The engine's own dialogs (the chooser, the security key's PIN) stay behind `ClientUserInterface`; this service's
/// reports go to the provider's `ProviderUserInterface` through `links`.
public struct BrowserService: Sendable {
    public let links: ComputerLinks
    public let factory: BrowserAuthenticatorFactory

    public init(links: ComputerLinks, factory: BrowserAuthenticatorFactory) {
        self.links = links
        self.factory = factory
    }

    /// The authenticators offered, in the order a browser lists them: this computer, a phone, a security key.
    /// Linking (`--link`) and a linked phone (`--phone NAME`) unlock the store first, since the links are sealed in
    /// it: without a store, or with a `--phone` name it does not hold, this fails before any radio or relay is
    /// touched.
    public func authenticators(for request: BrowserAuthenticators) async throws -> [any ClientAuthenticator] {
        switch request.phone {
        case .qrCode(link: true), .linked: try await links.unlock()
        case .qrCode(link: false), .notOffered: break
        }
        var authenticators: [any ClientAuthenticator] = []
        if request.thisComputer { authenticators.append(try factory.thisComputer()) }
        switch request.phone {
        case .notOffered:
            break
        case .qrCode(let link):
            let links = links
            var onLinking: BrowserAuthenticatorFactory.OnLinking?
            if link {
                onLinking = { @Sendable linking, relay in links.remember(linking, relay: relay) }
            }
            authenticators.append(try factory.phone(onLinking))
        case .linked(let name):
            let phone = try await links.phone(named: name)
            let links = links
            authenticators.append(
                try factory.linkedPhone(phone, { links.gone(name) }, { links.used(name) }))
        }
        if let spec = request.securityKey { authenticators.append(try factory.securityKey(spec)) }
        return authenticators
    }
}
