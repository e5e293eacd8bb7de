import ArgumentParser
import Foundation
import JSON
import PasskeyProvider
import ProximityIO
import TerminalIO
import WebAuthnClient

extension Passkey.Client {
    struct Capabilities: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "PublicKeyCredential.getClientCapabilities(): what this client can do on this machine now.",
            discussion: """
                Prints the WebAuthn Level 3 capability map: hybridTransport is true only when the Bluetooth radio \
                (--ble, else the radio setting) can scan now, passkeyPlatformAuthenticator and \
                userVerifyingPlatformAuthenticator only when a passkey store exists; the extension:… entries are \
                the extension inputs this client passes on. Nothing is claimed that this program does not do \
                (Docs/Client.md).
                """)

        @OptionGroup var store: StoreOptions
        @OptionGroup var radio: RadioOptions
        @OptionGroup var format: JSONOption
        @OptionGroup var verbosity: OutputOptions

        func run() async throws {
            let machine = ClientCapabilities.Machine(
                radioUsable: await Radio.isUsable(radio.mode), storeExists: store.access().exists)
            let map = ClientCapabilities.map(for: machine)
            if format.json {
                printJSON(JSONOutput.text(JSONValue.sortedObject(map.map { ($0.key, JSONValue.bool($0.value)) })))
            } else {
                printLine(map.keys.sorted().map { "\($0)  \(map[$0] == true ? "yes" : "no")" }.joined(separator: "\n"))
            }
        }
    }
}
