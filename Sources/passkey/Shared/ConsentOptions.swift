import ArgumentParser
import CTAP2
import ConsentIO
import DBus
import Foundation
import PasskeyProvider
import PasskeySettings
import PasskeyStoreIO
import TerminalIO

#if canImport(Glibc)
    import Glibc
#endif

extension ConsentChannel: ExpressibleByArgument {}

/// `--consent`, `--consent-uv-window` and `--consent-timeout`: how a service asks for consent when it may have no
/// terminal (`Docs/Consent.md`). Each is also a setting: `PASSKEY_CONSENT`, `PASSKEY_CONSENT_UV_WINDOW`,
/// `PASSKEY_CONSENT_TIMEOUT`, the settings file.
struct ConsentOptions: SettingFlags {
    @Option(
        help: ArgumentHelp(
            "How to ask for consent: terminal, notification (a desktop notification, else the queue), queue "
                + "(`passkey pending`) or auto (the terminal when standard input is one, else a notification, else "
                + "the queue). Default: $PASSKEY_CONSENT, else the settings file's consent, else auto.",
            valueName: "channel"))
    var consent: ConsentChannel?

    @Option(
        name: .customLong("consent-uv-window"),
        help: ArgumentHelp(
            "Minutes after `passkey unlock` during which an Allow given without a terminal also verifies you "
                + "(0: never). Default: $PASSKEY_CONSENT_UV_WINDOW, else the settings file's, else 5.",
            valueName: "minutes"))
    var uvWindow: Double?

    @Option(
        name: .customLong("consent-timeout"),
        help: ArgumentHelp(
            "Seconds a request asked without a terminal waits for an answer. Default: $PASSKEY_CONSENT_TIMEOUT, "
                + "else the settings file's, else 60.",
            valueName: "seconds"))
    var timeout: Double?

    /// The flags given, as the text `Settings` reads.
    var flags: [SettingKey: String] {
        var flags: [SettingKey: String] = [:]
        flags[.consent] = consent?.rawValue
        flags[.consentUVWindow] = uvWindow.map { Settings.secondsText($0) }
        flags[.consentTimeout] = timeout.map { Settings.secondsText($0) }
        return flags
    }

    /// The interface a service asks through: the routes the `consent` setting gives for this process
    /// (`ConsentRoutes.choose`), over the terminal's interface. Says once which way it asks.
    func interface(terminal: TerminalInterface, unattended: Bool) -> ConsentChannelInterface {
        let environment = ProcessInfo.processInfo.environment
        let settings = settings
        let queue = PendingQueue(environment: environment)
        let routes =
            unattended
            ? [ConsentRoute.terminal]
            : ConsentRoutes.choose(
                settings.consent.value, standardInputIsTerminal: isatty(STDIN_FILENO) == 1,
                sessionBus: DBusBus.sessionAddress(environment: environment, socketExists: { access($0, F_OK) == 0 })
                    != nil,
                runtimeDirectory: queue != nil)
        let interface = ConsentChannelInterface(
            routes: routes, terminal: terminal, queue: queue,
            timeout: .milliseconds(Int64(settings.consentTimeout.value * 1000)), environment: environment,
            log: { Terminal.shared.write($0 + "\n") })
        if interface.asksWithoutTerminal {
            Terminal.shared.write(
                "passkey: consent: asking through "
                    + routes.map { $0 == .queue ? "the queue (passkey pending)" : "a desktop notification" }
                    .joined(separator: ", else ")
                    + " (consent = \(settings.consent.value))\n")
        }
        return interface
    }

    /// The consent an authenticator on `store` asks: the person at the terminal or unattended approval as before
    /// (`ApprovalOptions.consent`), or, without a terminal, an Allow through `interface` that verifies only
    /// within `consent-uv-window` of the agent's unlock (`ConsentWithoutTerminal`).
    func consent(
        interface: ConsentChannelInterface, approval: ApprovalOptions, store: SQLiteCredentialStore,
        access: StoreAccess
    ) -> any UserInteraction {
        guard !approval.unattended, interface.asksWithoutTerminal else {
            return approval.mode.consent(
                interface: interface, verifyPassphrase: { store.verifyPassphrase($0) })
        }
        let minutes = settings.consentUVWindow.value
        return ConsentWithoutTerminal(
            asker: interface, window: .milliseconds(Int64(minutes * 60_000)), timeout: interface.timeout,
            unlockedAgo: { access.agentUnlockAge() }, log: { Terminal.shared.write($0 + "\n") })
    }
}
