import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// The real executables over loopback: `passkey-relay`, `passkey client` as the computer and `passkey scan` as the
/// phone, each its own process, meeting through the relay and the simulated radio.
@Suite(.serialized)
struct CommandLineScenarioTests {
    static let binDirectory: URL? = {
        let here = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath().deletingLastPathComponent()
        return [here, here.deletingLastPathComponent()].first {
            FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("passkey").path)
                && FileManager.default.isExecutableFile(atPath: $0.appendingPathComponent("passkey-relay").path)
        }
    }()

    @Test func registerThenSignInWithTheExecutables() async throws {
        let bin = try #require(Self.binDirectory, "passkey and passkey-relay are not built next to the tests")
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let relay = try ChildProcess(
            bin.appendingPathComponent("passkey-relay"), ["--listen", "127.0.0.1:0", "--threads", "1"])
        defer { relay.stop() }
        let listening = try #require(
            await relay.stdoutLine(timeout: .seconds(60)), "passkey-relay said: \(relay.output) \(relay.errors)")
        #expect(listening.hasPrefix("listening on ws://127.0.0.1:"))
        let relayURL = String(listening.dropFirst("listening on ".count))
        let radio = "sim:127.0.0.1:\(try freeUDPPort())"
        let rpState = directory.file("rp.json")
        let store = directory.file("phone.sqlite")
        let common = [
            "--rp", "example.com", "--relay", relayURL, "--ble", radio, "--rp-state", rpState, "--timeout", "60",
        ]
        let environment = ["PASSKEY_PASSPHRASE": "correct horse", "NO_COLOR": "1"]

        // Registration: the URL comes from the client's output and goes to `passkey scan` as an argument.
        let register = try ChildProcess(
            bin.appendingPathComponent("passkey"), ["client", "register", "--user", "alice", "--json"] + common,
            environment: environment)
        let url = try #require(await register.stderrLine(timeout: .seconds(60), where: { $0.hasPrefix("FIDO:/") }))
        let scan = try ChildProcess(
            bin.appendingPathComponent("passkey"),
            ["scan", url, "--relay", relayURL, "--ble", radio, "--store", store, "--yes"], environment: environment)
        #expect(await scan.wait().exitStatus == 0)
        #expect(await register.wait().exitStatus == 0)
        let registered = try JSONSerialization.jsonObject(with: Data(register.output.utf8)) as? [String: Any]
        #expect(registered?["outcome"] as? String == "registered")
        #expect(registered?["user"] as? String == "alice")
        #expect(registered?["userVerified"] as? Bool == true)
        let scanLog = scan.errors
        #expect(scanLog.contains("request received: makeCredential"))
        #expect(scanLog.contains("auto-approved: example.com: create a passkey for \"alice\"?"))
        #expect(!scanLog.contains("correct horse"), "the passphrase never appears in output")
        #expect(try fileMode(rpState) == 0o600)

        // Sign-in: the QR code goes through a PNG file and `passkey scan --image`.
        let png = directory.file("qr.png")
        let signIn = try ChildProcess(
            bin.appendingPathComponent("passkey"), ["client", "sign-in", "--json", "--qr-png", png] + common,
            environment: environment)
        _ = try #require(await signIn.stderrLine(timeout: .seconds(60), where: { $0.hasPrefix("FIDO:/") }))
        let scanImage = try ChildProcess(
            bin.appendingPathComponent("passkey"),
            ["scan", "--image", png, "--relay", relayURL, "--ble", radio, "--store", store, "--yes"],
            environment: environment)
        #expect(await scanImage.wait().exitStatus == 0)
        #expect(await signIn.wait().exitStatus == 0)
        let signedIn = try JSONSerialization.jsonObject(with: Data(signIn.output.utf8)) as? [String: Any]
        #expect(signedIn?["outcome"] as? String == "signedIn")
        #expect(signedIn?["user"] as? String == "alice")
        #expect(signedIn?["credentialId"] as? String == registered?["credentialId"] as? String)
    }

    @Test func aQRCodeNobodyAnswersFailsWithAPlainMessageAndStoresNothing() async throws {
        let bin = try #require(Self.binDirectory)
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        let rpState = directory.file("rp.json")
        let client = try ChildProcess(
            bin.appendingPathComponent("passkey"),
            [
                "client", "register", "--rp", "example.com", "--user", "alice", "--relay", "ws://127.0.0.1:9",
                "--ble", "sim:127.0.0.1:\(try freeUDPPort())", "--rp-state", rpState, "--timeout", "1",
            ], environment: ["NO_COLOR": "1"])
        // NotAllowedError, as a browser whose phone never came.
        #expect(await client.wait().exitStatus == 10)
        #expect(client.errors.contains("passkey: NotAllowedError: "))
        #expect(client.errors.contains("no nearby authenticator answered within 1 s"))
        #expect(client.output.contains("FIDO:/"), "the QR code and its URL were shown")
        #expect(!FileManager.default.fileExists(atPath: rpState))
    }

    @Test func badInputIsRefusedBeforeAnythingHappens() async throws {
        let bin = try #require(Self.binDirectory)
        let passkey = bin.appendingPathComponent("passkey")
        let cases: [([String], String)] = [
            (["scan", "FIDO:/123"], "not a hybrid QR code"),
            (["scan", "https://example.com"], "not a hybrid QR code"),
            (["scan", "--ble", "bluetooth", "FIDO:/1"], "bluetooth"),
            (
                ["client", "register", "--rp", "example.com", "--origin", "https://evil.example", "--user", "a"],
                "is not evil.example or a registrable suffix"
            ),
            (["client", "sign-in", "--rp", "example.com", "--relay", "http://x"], "--relay"),
        ]
        for (arguments, message) in cases {
            let child = try ChildProcess(
                passkey, arguments, environment: ["PASSKEY_STORE": "/nonexistent/never-created"])
            #expect(await child.wait().exitStatus != 0, "\(arguments)")
            #expect(child.errors.contains(message), "\(arguments): \(child.errors)")
        }
        #expect(!FileManager.default.fileExists(atPath: "/nonexistent/never-created"))
    }
}

func fileMode(_ path: String) throws -> Int {
    let attributes = try FileManager.default.attributesOfItem(atPath: path)
    return (attributes[.posixPermissions] as? Int ?? 0) & 0o777
}

/// A UDP port free right now on loopback.
func freeUDPPort() throws -> Int {
    let descriptor = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard descriptor >= 0 else { throw POSIXError(.EIO) }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    address.sin_port = 0
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
            bind(descriptor, pointer, length) == 0 && getsockname(descriptor, pointer, &length) == 0
        }
    }
    guard bound else { throw POSIXError(.EADDRINUSE) }
    return Int(UInt16(bigEndian: address.sin_port))
}
