import Basics
import CTAP2
import CTAPHID
import SecurityKeyDriver
import Synchronization
import WebAuthn

/// What `passkey debug security-key` prints about a key: its description, the round trip's steps, and the key's
/// waits ("touch your security key", and once that another program has it).
public enum SecurityKeyLines {
    /// `getinfo`'s lines: the key's name, its `CTAPHID_INIT` answer and its authenticatorGetInfo, options sorted
    /// with `no` before the false ones (`clientPin` / `noclientPin`), every text made safe for a terminal.
    public static func description(name: String, device: CTAPHIDDeviceInfo, info: AuthenticatorInfo) -> [String] {
        let capabilities: [(CTAPHIDCapabilities, String)] = [(.wink, "wink"), (.cbor, "cbor"), (.nmsg, "nmsg")]
        let version = device.deviceVersion
        let options = info.options.sorted { $0.key < $1.key }.map { $0.value ? $0.key : "no\($0.key)" }
        return [
            "security key: \(name.terminalSafe)",
            "ctaphid: protocol \(device.protocolVersion), device \(version.major).\(version.minor).\(version.build), "
                + "capabilities \(capabilities.filter { device.capabilities.contains($0.0) }.map(\.1).joined(separator: " "))",
            "versions: \(words(info.versions))",
            "aaguid: \(AAGUID(bytes: info.aaguid)?.description ?? info.aaguid.hexString)",
            "options: \(words(options))",
            "pinUvAuthProtocols: \(info.pinUvAuthProtocols.map { String($0.rawValue) }.joined(separator: " "))",
            "transports: \(words(info.transports))",
            "extensions: \(words(info.extensions))",
        ]
    }

    /// `UP UV`, `UP`, or `none`: the user-presence and user-verification flags of authenticator data.
    public static func flags(_ flags: AuthenticatorFlags) -> String {
        var names: [String] = []
        if flags.contains(.userPresent) { names.append("UP") }
        if flags.contains(.userVerified) { names.append("UV") }
        return names.isEmpty ? "none" : names.joined(separator: " ")
    }

    /// The round trip's first step: the new credential (its ID's first 8 bytes in hex), format and flags.
    public static func madeCredential(id: [UInt8], format: String, flags: AuthenticatorFlags) -> String {
        "passkey: makeCredential OK: credential \(id.hexString.prefix(16))…, format \(format.terminalSafe), flags "
            + "\(Self.flags(flags))\n"
    }

    /// The key's waits as lines on standard error: "touch your security key" each time it asks, and once only that
    /// another program holds it.
    public static func statusReporter(
        write: @escaping @Sendable (String) -> Void = { Terminal.shared.write($0) }
    ) -> @Sendable (SecurityKeyStatus) -> Void {
        let busyTold = Mutex(false)
        return { status in
            switch status {
            case .touchNeeded: write("passkey: touch your security key\n")
            case .busyElsewhere:
                let first = busyTold.withLock { told in
                    defer { told = true }
                    return !told
                }
                if first { write("passkey: the key is busy with another program; waiting\n") }
            case .processing: break
            }
        }
    }

    private static func words(_ texts: [String]) -> String { texts.map(\.terminalSafe).joined(separator: " ") }
}
