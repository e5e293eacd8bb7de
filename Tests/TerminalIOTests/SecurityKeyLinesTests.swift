import CTAP2
import CTAPHID
import SecurityKeyDriver
import Synchronization
import Testing
import WebAuthn

@testable import TerminalIO

/// What `passkey debug security-key` prints about a key.
struct SecurityKeyLinesTests {
    @Test func getInfoDescribesTheDeviceAndItsOptionsSorted() {
        let device = CTAPHIDDeviceInfo(
            channel: ChannelID(rawValue: 7), protocolVersion: 2,
            deviceVersion: DeviceVersion(major: 1, minor: 4, build: 9), capabilities: [.wink, .cbor])
        let aaguid: [UInt8] = [0x01] + [UInt8](repeating: 0, count: 14) + [0xFF]
        let info = AuthenticatorInfo(
            versions: ["FIDO_2_0", "FIDO_2_1"], extensions: ["credProtect", "hmac-secret"], aaguid: aaguid,
            options: ["rk": true, "clientPin": false, "up": true, "uv": false], pinUvAuthProtocols: [.two, .one],
            transports: ["usb"])
        #expect(
            SecurityKeyLines.description(name: "Key\u{1B}[2J one", device: device, info: info) == [
                "security key: Key\\u{1B}[2J one",
                "ctaphid: protocol 2, device 1.4.9, capabilities wink cbor",
                "versions: FIDO_2_0 FIDO_2_1",
                "aaguid: 01000000-0000-0000-0000-0000000000ff",
                "options: noclientPin rk up nouv",
                "pinUvAuthProtocols: 2 1",
                "transports: usb",
                "extensions: credProtect hmac-secret",
            ])
    }

    @Test func flagsNameUserPresenceAndVerification() {
        #expect(SecurityKeyLines.flags([.userPresent, .userVerified]) == "UP UV")
        #expect(SecurityKeyLines.flags([.userPresent]) == "UP")
        #expect(SecurityKeyLines.flags([]) == "none")
        #expect(
            SecurityKeyLines.madeCredential(id: Array(0..<32), format: "packed", flags: [.userPresent])
                == "passkey: makeCredential OK: credential 0001020304050607…, format packed, flags UP\n")
    }

    @Test func touchIsSaidEachTimeAndBusyOnce() {
        let written = Mutex<[String]>([])
        let report = SecurityKeyLines.statusReporter { line in written.withLock { $0.append(line) } }
        for status: SecurityKeyStatus in [.touchNeeded, .busyElsewhere, .processing, .busyElsewhere, .touchNeeded] {
            report(status)
        }
        #expect(
            written.withLock { $0 } == [
                "passkey: touch your security key\n", "passkey: the key is busy with another program; waiting\n",
                "passkey: touch your security key\n",
            ])
    }
}
