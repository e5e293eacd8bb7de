import Hybrid
import Proximity

/// Where an effective setting came from, strongest first: a flag beats the environment, which beats the settings
/// file, which beats the built-in default.
public enum SettingSource: String, Hashable, Sendable, CaseIterable {
    case flag, environment, file, `default`
}

/// One setting a person can choose in the settings file, the environment or a flag (`Docs/Settings.md`).
public enum SettingKey: String, Hashable, Sendable, CaseIterable {
    /// The passkey store file.
    case store
    /// The tunnel server (`ws://` or `wss://`) to use instead of the one the protocol names.
    case relay
    /// A PEM file of the certificate authority that signed a `wss://` relay's certificate.
    case relayCA = "relay-ca"
    /// The Bluetooth radio: `hci`, `hci:N` (bluetoothd), `hci-raw`, `hci-raw:N`, `sim` or `sim:HOST:PORT`.
    case radio
    /// Seconds to wait for the other device at each step of a hybrid session.
    case timeout
    /// How a service without a terminal asks for consent: `terminal`, `notification`, `queue` or `auto`.
    case consent
    /// Minutes after `passkey unlock` during which an Allow given without a terminal counts as user verification.
    case consentUVWindow = "consent-uv-window"
    /// Seconds a request asked without a terminal waits for an answer.
    case consentTimeout = "consent-timeout"

    /// The key in the settings file.
    public var fileKey: String { rawValue }

    /// The environment variable that sets it.
    public var environmentVariable: String {
        switch self {
        case .store: "PASSKEY_STORE"
        case .relay: "PASSKEY_RELAY"
        case .relayCA: "PASSKEY_RELAY_CA"
        case .radio: "PASSKEY_BLE"
        case .timeout: "PASSKEY_TIMEOUT"
        case .consent: "PASSKEY_CONSENT"
        case .consentUVWindow: "PASSKEY_CONSENT_UV_WINDOW"
        case .consentTimeout: "PASSKEY_CONSENT_TIMEOUT"
        }
    }

    /// The command-line flag that sets it.
    public var flag: String {
        switch self {
        case .store: "--store"
        case .relay: "--relay"
        case .relayCA: "--relay-ca"
        case .radio: "--ble"
        case .timeout: "--timeout"
        case .consent: "--consent"
        case .consentUVWindow: "--consent-uv-window"
        case .consentTimeout: "--consent-timeout"
        }
    }
}

/// How a service asks the person for consent (`consent`): at the terminal, through the desktop's notifications,
/// through the queue `passkey pending` shows, or `auto`: the terminal when standard input is one, else a
/// notification when a session bus and a notification server are there, else the queue (`ConsentRoutes`).
public enum ConsentChannel: String, Hashable, Sendable, CaseIterable, CustomStringConvertible {
    case terminal, notification, queue, auto

    public var description: String { rawValue }
}

/// A value and where it came from.
public struct SettingValue<Value: Hashable & Sendable>: Hashable, Sendable {
    public var value: Value
    public var source: SettingSource

    public init(_ value: Value, from source: SettingSource) {
        self.value = value
        self.source = source
    }
}

/// Why the settings cannot be used, for a person: one line naming the file and line or key, the variable or the
/// flag, and what is wrong.
public struct SettingsError: Error, Hashable, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}

/// The effective settings: for each key, the value of the strongest source that gives one, and that source.
///
/// Pure: the flags, the environment and the file's contents come in as values. Every value is checked the same way
/// wherever it came from, and a bad one is refused naming where it came from, rather than passed over for a weaker
/// source.
public struct Settings: Hashable, Sendable {
    /// The seconds a hybrid session waits at each step unless told otherwise.
    public static let defaultTimeout: Double = 120
    /// The longest wait a timeout may ask for.
    public static let maximumTimeout: Double = 3600

    /// The store file's path.
    public var store: SettingValue<String>
    /// The tunnel server to use, or nil for the one the protocol names.
    public var relay: SettingValue<TunnelServerBaseURL?>
    /// The relay's certificate authority file, or nil for the system's trust store.
    public var relayCA: SettingValue<String?>
    /// The Bluetooth radio.
    public var radio: SettingValue<ProximityMode>
    /// Seconds to wait for the other device at each step.
    public var timeout: SettingValue<Double>
    /// How consent is asked.
    public var consent: SettingValue<ConsentChannel>
    /// Minutes after an unlock during which an Allow without a terminal counts as user verification (0: never).
    public var consentUVWindow: SettingValue<Double>
    /// Seconds a request asked without a terminal waits.
    public var consentTimeout: SettingValue<Double>

    /// The minutes of `consent-uv-window` unless told otherwise.
    public static let defaultConsentUVWindow: Double = 5
    /// The longest `consent-uv-window`: one day.
    public static let maximumConsentUVWindow: Double = 1440
    /// The seconds a request without a terminal waits unless told otherwise (as long as a terminal prompt).
    public static let defaultConsentTimeout: Double = 60

    /// Resolves every key: `flags` (the text each given flag had), then `environment`'s variables (an empty one is
    /// unset), then `file`, then the default (`defaultStore` for the store: where the data directory puts it).
    public init(
        flags: [SettingKey: String] = [:], environment: [String: String], file: SettingsFile?, defaultStore: String
    ) throws(SettingsError) {
        func pick(_ key: SettingKey) -> (text: String, source: SettingSource, origin: String)? {
            if let text = flags[key] { return (text, .flag, key.flag) }
            if let text = environment[key.environmentVariable], !text.isEmpty {
                return (text, .environment, key.environmentVariable)
            }
            if let text = file?.values[key] { return (text, .file, "\(file?.path ?? "settings file"): \(key.fileKey)") }
            return nil
        }
        if case let (text, source, origin)? = pick(.store) {
            guard !text.isEmpty else { throw SettingsError("\(origin): the store path is empty") }
            store = SettingValue(Self.expandingHome(text, environment: environment), from: source)
        } else {
            store = SettingValue(defaultStore, from: .default)
        }
        if case let (text, source, origin)? = pick(.relay) {
            do throws(TunnelServerURLError) {
                relay = SettingValue(try TunnelServerBaseURL(string: text), from: source)
            } catch {
                throw SettingsError("\(origin): \(text) is not a relay: \(error.description)")
            }
        } else {
            relay = SettingValue(nil, from: .default)
        }
        if case let (text, source, origin)? = pick(.relayCA) {
            guard !text.isEmpty else { throw SettingsError("\(origin): the certificate file's path is empty") }
            relayCA = SettingValue(Self.expandingHome(text, environment: environment), from: source)
        } else {
            relayCA = SettingValue(nil, from: .default)
        }
        if case let (text, source, origin)? = pick(.radio) {
            guard let mode = ProximityMode(argument: text) else {
                throw SettingsError("\(origin): \(text) is not a radio (hci, hci:N, hci-raw:N, sim or sim:HOST:PORT)")
            }
            radio = SettingValue(mode, from: source)
        } else {
            radio = SettingValue(.hci(adapter: 0), from: .default)
        }
        if case let (text, source, origin)? = pick(.timeout) {
            guard let seconds = Double(text), seconds > 0, seconds <= Self.maximumTimeout else {
                throw SettingsError(
                    "\(origin): \(text) is not a number of seconds above 0 and at most \(Int(Self.maximumTimeout))")
            }
            timeout = SettingValue(seconds, from: source)
        } else {
            timeout = SettingValue(Self.defaultTimeout, from: .default)
        }
        if case let (text, source, origin)? = pick(.consent) {
            guard let channel = ConsentChannel(rawValue: text) else {
                throw SettingsError(
                    "\(origin): \(text) is not a consent channel (terminal, notification, queue or auto)")
            }
            consent = SettingValue(channel, from: source)
        } else {
            consent = SettingValue(.auto, from: .default)
        }
        if case let (text, source, origin)? = pick(.consentUVWindow) {
            guard let minutes = Double(text), minutes >= 0, minutes <= Self.maximumConsentUVWindow else {
                throw SettingsError(
                    "\(origin): \(text) is not a number of minutes from 0 to \(Int(Self.maximumConsentUVWindow))")
            }
            consentUVWindow = SettingValue(minutes, from: source)
        } else {
            consentUVWindow = SettingValue(Self.defaultConsentUVWindow, from: .default)
        }
        if case let (text, source, origin)? = pick(.consentTimeout) {
            guard let seconds = Double(text), seconds > 0, seconds <= Self.maximumTimeout else {
                throw SettingsError(
                    "\(origin): \(text) is not a number of seconds above 0 and at most \(Int(Self.maximumTimeout))")
            }
            consentTimeout = SettingValue(seconds, from: source)
        } else {
            consentTimeout = SettingValue(Self.defaultConsentTimeout, from: .default)
        }
    }

    /// Every key at its default, `store` the default store.
    public static func defaults(store: String) -> Settings {
        Settings(
            store: SettingValue(store, from: .default), relay: SettingValue(nil, from: .default),
            relayCA: SettingValue(nil, from: .default), radio: SettingValue(.hci(adapter: 0), from: .default),
            timeout: SettingValue(defaultTimeout, from: .default), consent: SettingValue(.auto, from: .default),
            consentUVWindow: SettingValue(defaultConsentUVWindow, from: .default),
            consentTimeout: SettingValue(defaultConsentTimeout, from: .default))
    }

    private init(
        store: SettingValue<String>, relay: SettingValue<TunnelServerBaseURL?>, relayCA: SettingValue<String?>,
        radio: SettingValue<ProximityMode>, timeout: SettingValue<Double>, consent: SettingValue<ConsentChannel>,
        consentUVWindow: SettingValue<Double>, consentTimeout: SettingValue<Double>
    ) {
        self.store = store
        self.relay = relay
        self.relayCA = relayCA
        self.radio = radio
        self.timeout = timeout
        self.consent = consent
        self.consentUVWindow = consentUVWindow
        self.consentTimeout = consentTimeout
    }

    /// Each key's effective value as text (empty for "none") and its source, in `SettingKey` order.
    public var entries: [(key: SettingKey, value: String, source: SettingSource)] {
        [
            (.store, store.value, store.source),
            (.relay, relay.value?.description ?? "", relay.source),
            (.relayCA, relayCA.value ?? "", relayCA.source),
            (.radio, radio.value.description, radio.source),
            (.timeout, Self.secondsText(timeout.value), timeout.source),
            (.consent, consent.value.rawValue, consent.source),
            (.consentUVWindow, Self.secondsText(consentUVWindow.value), consentUVWindow.source),
            (.consentTimeout, Self.secondsText(consentTimeout.value), consentTimeout.source),
        ]
    }

    /// `120` for whole seconds, `0.5` otherwise.
    public static func secondsText(_ seconds: Double) -> String {
        seconds == seconds.rounded() && abs(seconds) < 1e15 ? String(Int(seconds)) : String(seconds)
    }

    /// `~/x` as `$HOME/x`; anything else as it is.
    static func expandingHome(_ path: String, environment: [String: String]) -> String {
        guard path == "~" || path.hasPrefix("~/"), let home = environment["HOME"], !home.isEmpty else { return path }
        return home + path.dropFirst()
    }
}
