import ArgumentParser
import Foundation
import Hybrid
import HybridIO
import NIOSSL
import PasskeyFilesIO
import PasskeyProvider
import PasskeySettings
import Proximity

extension ProximityMode: ExpressibleByArgument {}

/// `--relay`, `--relay-ca`, `--ble` and `--timeout`: how a hybrid session reaches the other device. Each is also a
/// setting (`Docs/Settings.md`): a flag given here beats `PASSKEY_RELAY`, `PASSKEY_RELAY_CA`, `PASSKEY_BLE` and
/// `PASSKEY_TIMEOUT`, which beat the settings file.
struct HybridOptions: SettingFlags {
    @Option(
        help: ArgumentHelp(
            "Tunnel server to use instead of the one the protocol names (a self-hosted `passkey-relay`). "
                + "Default: $PASSKEY_RELAY, else the settings file's relay.",
            valueName: "ws[s]://host[:port]"))
    var relay: String?

    @Option(
        help: ArgumentHelp(
            "PEM file of the certificate authority that signed a wss:// relay's certificate. "
                + "Default: $PASSKEY_RELAY_CA, else the settings file's relay-ca.",
            valueName: "file"),
        completion: .file(extensions: ["pem", "crt"]))
    var relayCA: String?

    @Option(help: HybridOptions.bleHelp, completion: .list(["hci", "hci:0", "hci-raw:0", "sim"]))
    var ble: ProximityMode?

    static let bleHelp = ArgumentHelp(
        "Bluetooth radio: hci, hci:N (a BlueZ adapter through bluetoothd), hci-raw, hci-raw:N (through a raw "
            + "HCI socket: CAP_NET_RAW), sim or sim:HOST:PORT (the simulated radio, "
            + "Docs/Proximity.md). Default: $PASSKEY_BLE, else the settings file's radio, else hci.",
        valueName: "mode")

    @Option(
        help: ArgumentHelp(
            "Seconds to wait for the other device at each step. Default: $PASSKEY_TIMEOUT, else the settings "
                + "file's timeout, else 120.",
            valueName: "seconds"))
    var timeout: Double?

    /// The flags given, as the text `Settings` reads.
    var flags: [SettingKey: String] {
        var flags: [SettingKey: String] = [:]
        flags[.relay] = relay
        flags[.relayCA] = relayCA
        flags[.radio] = ble?.description
        flags[.timeout] = timeout.map { Settings.secondsText($0) }
        return flags
    }

    var mode: ProximityMode { settings.radio.value }

    var tunnelServer: TunnelServerBaseURL? { settings.relay.value }

    var timeouts: HybridTimeouts {
        var timeouts = HybridTimeouts(all: .milliseconds(Int64(settings.timeout.value * 1000)))
        timeouts.connect = min(timeouts.connect, .seconds(10))
        return timeouts
    }

    /// Trust settings for a wss:// relay: the system's, or only the relay CA setting's certificates.
    func tlsConfiguration() throws -> TLSConfiguration? {
        let setting = settings.relayCA
        guard let relayCA = setting.value else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        let certificates: [NIOSSLCertificate]
        do {
            certificates = try NIOSSLCertificate.fromPEMFile(relayCA)
        } catch {
            let origin = setting.source == .flag ? "--relay-ca" : "the relay CA setting (\(setting.source.rawValue))"
            throw CommandFailure(
                "cannot use \(origin) \(relayCA): \(Self.readFailure(path: relayCA))",
                detail: String(describing: error), exitCode: ExitStatus.failure)
        }
        guard !certificates.isEmpty else {
            throw CommandFailure("cannot use \(relayCA) as the relay CA: it holds no PEM certificate")
        }
        configuration.trustRoots = .certificates(certificates)
        return configuration
    }

    /// Why a certificate file could not be used, in a person's terms.
    static func readFailure(path: String) -> String {
        let reason = UnreadableFile.reason(path)
        return reason == "it could not be read" ? "it is not a PEM certificate file" : reason
    }
}

/// `--ble` alone, for a command that only asks whether the radio is there (`client capabilities`).
struct RadioOptions: SettingFlags {
    @Option(help: HybridOptions.bleHelp, completion: .list(["hci", "hci:0", "hci-raw:0", "sim"]))
    var ble: ProximityMode?

    var flags: [SettingKey: String] { ble.map { [.radio: $0.description] } ?? [:] }

    var mode: ProximityMode { settings.radio.value }
}
