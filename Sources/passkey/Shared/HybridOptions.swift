import ArgumentParser
import Foundation
import Hybrid
import HybridIO
import NIOSSL
import Proximity

extension ProximityMode: ExpressibleByArgument {}

/// `--relay`, `--relay-ca`, `--ble` and `--timeout`: how a hybrid session reaches the other device.
struct HybridOptions: ParsableArguments {
    @Option(
        help: ArgumentHelp(
            "Tunnel server to use instead of the one the protocol names (a self-hosted `passkey-relay`).",
            valueName: "ws[s]://host[:port]"))
    var relay: String?

    @Option(
        help: ArgumentHelp(
            "PEM file of the certificate authority that signed a wss:// relay's certificate.", valueName: "file"),
        completion: .file(extensions: ["pem", "crt"]))
    var relayCA: String?

    @Option(
        help: ArgumentHelp(
            "Bluetooth radio: hci, hci:N (a BlueZ adapter), sim or sim:HOST:PORT (the simulated radio, "
                + "Docs/Proximity.md). Default: $PASSKEY_BLE, else hci.",
            valueName: "mode"),
        completion: .list(["hci", "hci:0", "sim"]))
    var ble: ProximityMode?

    @Option(help: ArgumentHelp("Seconds to wait for the other device at each step.", valueName: "seconds"))
    var timeout: Double = 120

    func validate() throws {
        if let relay {
            do {
                _ = try TunnelServerBaseURL(string: relay)
            } catch {
                throw ValidationError("--relay: \(error)")
            }
        }
        guard timeout > 0, timeout <= 3600 else { throw ValidationError("--timeout must be between 0 and 3600 s.") }
        if ble == nil, let fromEnvironment = ProcessInfo.processInfo.environment["PASSKEY_BLE"],
            ProximityMode(argument: fromEnvironment) == nil
        {
            throw ValidationError("PASSKEY_BLE=\(fromEnvironment) is not hci, hci:N, sim or sim:HOST:PORT.")
        }
    }

    var mode: ProximityMode {
        if let ble { return ble }
        if let fromEnvironment = ProcessInfo.processInfo.environment["PASSKEY_BLE"],
            let mode = ProximityMode(argument: fromEnvironment)
        {
            return mode
        }
        return .hci(adapter: 0)
    }

    var tunnelServer: TunnelServerBaseURL? { relay.flatMap { try? TunnelServerBaseURL(string: $0) } }

    var timeouts: HybridTimeouts {
        var timeouts = HybridTimeouts(all: .milliseconds(Int64(timeout * 1000)))
        timeouts.connect = min(timeouts.connect, .seconds(10))
        return timeouts
    }

    /// Trust settings for a wss:// relay: the system's, or only `--relay-ca`.
    func tlsConfiguration() throws -> TLSConfiguration? {
        guard let relayCA else { return nil }
        var configuration = TLSConfiguration.makeClientConfiguration()
        do {
            configuration.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(relayCA))
        } catch {
            throw ValidationError("--relay-ca \(relayCA): not a PEM certificate file (\(error))")
        }
        return configuration
    }
}
