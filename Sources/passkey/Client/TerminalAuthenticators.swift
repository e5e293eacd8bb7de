import ArgumentParser
import Basics
import CTAP2
import Foundation
import Hybrid
import HybridDriver
import PasskeyFilesIO
import PasskeyProvider
import PasskeyStoreIO
import Proximity
import ProximityIO
import PublicSuffix
import SecurityKeyDriver
import Synchronization
import TerminalIO
import WebAuthnClient
import WebAuthnClientDriver
import WebAuthnClientIO

extension HybridOptions {
    /// The authenticators as this terminal reaches them, for the browser service: the radio `mode`, the relay's
    /// TLS, and each step of a phone session as a status line on standard error. `thisComputer` is nil when the
    /// command never offers this computer's store (register, sign-in).
    func browserFactory(
        json: Bool, qrPNG: String?, thisComputer: (@Sendable () -> any ClientAuthenticator)? = nil
    ) -> BrowserAuthenticatorFactory {
        let options = self
        return BrowserAuthenticatorFactory(
            thisComputer: {
                guard let thisComputer else { throw CommandFailure("this command offers no passkey store") }
                return thisComputer()
            },
            phone: { onLinking in try options.phone(json: json, qrPNG: qrPNG, onLinking: onLinking) },
            linkedPhone: { phone, onGone, onUsed in try options.linkedPhone(phone, onGone: onGone, onUsed: onUsed) },
            securityKey: { spec in
                var options = SecurityKeyOptions()
                options.onStatus = { status in
                    if status == .touchNeeded { Terminal.shared.write("passkey: touch your security key\n") }
                }
                return SecurityKeyAuthenticator(spec, options: options)
            })
    }

    /// A phone over hybrid as these options reach it: the QR code on standard output (standard error when the output
    /// is JSON, and also into `qrPNG`), and each step of the session on standard error.
    func phone(
        json: Bool, qrPNG: String?, onLinking: BrowserAuthenticatorFactory.OnLinking?
    ) throws -> HybridPhoneAuthenticator {
        let mode = mode
        let status = StatusLine(enabled: true)
        return HybridPhoneAuthenticator(
            makeScanner: { () async throws(ProximityError) -> any ProximityScanner in
                try await Radio.scanner(for: mode)
            },
            tunnelServer: tunnelServer, timeouts: timeouts, environment: .system(tls: try tlsConfiguration()),
            progress: { event in
                if case .showQRCode(let url) = event { ClientOptions.show(url: url, toStandardError: json, png: qrPNG) }
                ClientLines.qrSession(event, radio: mode).map(status.say)
            },
            onLinking: onLinking)
    }

    /// The linked `phone`, reached without a QR code through its relay (or --relay); `onGone` when the relay says
    /// the phone revoked the link.
    func linkedPhone(
        _ phone: LinkedPhone, onGone: @escaping @Sendable () -> Void, onUsed: @escaping @Sendable () -> Void
    ) throws -> LinkedPhoneAuthenticator {
        let name = phone.name
        let mode = mode
        let status = StatusLine(enabled: true)
        return LinkedPhoneAuthenticator(
            phone: phone, endpoint: tunnelServer.map(TunnelServerEndpoint.override),
            makeScanner: { () async throws(ProximityError) -> any ProximityScanner in
                try await Radio.scanner(for: mode)
            },
            timeouts: timeouts, environment: .system(tls: try tlsConfiguration()),
            progress: { event in ClientLines.linkedSession(event, phone: name, radio: mode).map(status.say) },
            onGone: onGone, onUsed: onUsed)
    }
}

extension HybridOptions {
    /// The phones behind `passkey serve --phone`: by QR code, drawn on standard error with its URL as one flushed
    /// `phone: FIDO:/…` line on standard output (for scripts), the session's steps going to the bridge. With `links`
    /// (`--link`), the QR code offers linking and what the phone sends is remembered, and the most recently used
    /// linked phone is tried first, forgotten when its relay says the link is gone.
    func bridgePhones(links: ComputerLinks?, phoneName: String?) throws -> SecurityKeyBridge.Phones {
        let mode = mode
        let tunnelServer = tunnelServer
        let timeouts = timeouts
        let environment = HybridEnvironment.system(tls: try tlsConfiguration())
        let scanner: @Sendable () async throws(ProximityError) -> any ProximityScanner = {
            () async throws(ProximityError) -> any ProximityScanner in try await Radio.scanner(for: mode)
        }
        let onLinking: (@Sendable (LinkingInfo, TunnelServerBaseURL) -> Void)? =
            if let links { { linking, relay in links.remember(linking, relay: relay) } } else { nil }
        let qrCode: @Sendable (@escaping @Sendable (HybridClientProgress) -> Void) -> any ClientAuthenticator = {
            progress in
            HybridPhoneAuthenticator(
                makeScanner: scanner, tunnelServer: tunnelServer, timeouts: timeouts, environment: environment,
                progress: { event in
                    if case .showQRCode(let url) = event {
                        ClientOptions.show(url: url, toStandardError: true, png: nil)
                        ServingProcess.printLine("phone: \(url)")
                    }
                    progress(event)
                },
                onLinking: onLinking)
        }
        let linked: @Sendable (@escaping @Sendable (HybridClientProgress) -> Void) async -> (any ClientAuthenticator)? =
            {
                progress in
                guard let links, let phone = await links.bridgePhone(named: phoneName) else { return nil }
                return LinkedPhoneAuthenticator(
                    phone: phone, endpoint: tunnelServer.map(TunnelServerEndpoint.override), makeScanner: scanner,
                    timeouts: timeouts, environment: environment, progress: progress,
                    onGone: { links.gone(phone.name) }, onUsed: { links.used(phone.name) })
            }
        return SecurityKeyBridge.Phones(qrCode: qrCode, linked: linked)
    }
}

extension SuffixListRelyingPartyIDChecker {
    /// The check over the system's Public Suffix List file (Docs/Client.md).
    static func fromSystemList(relatedOrigins: (any RelatedOriginsSource)?) throws -> Self {
        do {
            return Self(list: try PublicSuffixListFile.load(), relatedOrigins: relatedOrigins)
        } catch {
            throw CommandFailure("\(error)")
        }
    }
}

extension PasswordPrompts {
    /// Prints the picked login as `client get --password` does: `{"type":"password","id":USER,"password":PASSWORD}`,
    /// after a line for the person unless the output is JSON only.
    static func printPicked(_ credential: PasswordCredential, json: Bool) {
        if !json {
            printLine(
                "signed in with the saved password for \(credential.login.userName.siteChosen) at "
                    + credential.login.service.text)
        }
        printLine(
            jsonObject([("type", "password"), ("id", credential.login.userName), ("password", credential.password)]))
    }
}
