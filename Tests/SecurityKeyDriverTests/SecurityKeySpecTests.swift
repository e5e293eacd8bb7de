import SecurityKeyDriver
import Testing

struct SecurityKeySpecTests {
    @Test(
        arguments: [
            ("auto", SecurityKeySpec.auto),
            ("hidraw:/dev/hidraw0", .hidraw(path: "/dev/hidraw0")),
            ("hidraw:/dev/hidraw12", .hidraw(path: "/dev/hidraw12")),
            ("udp:127.0.0.1:8111", .udp(host: "127.0.0.1", port: 8111)),
            ("udp:localhost:1", .udp(host: "localhost", port: 1)),
            ("udp:[::1]:65535", .udp(host: "::1", port: 65535)),
        ])
    func readsEveryForm(_ text: String, _ spec: SecurityKeySpec) throws {
        #expect(try SecurityKeySpec(parsing: text) == spec)
        #expect(try SecurityKeySpec(parsing: spec.description) == spec)
    }

    @Test(
        arguments: [
            "", "Auto", "hidraw:", "hidraw:hidraw0", "hidraw:/", "/dev/hidraw0", "udp:", "udp:127.0.0.1",
            "udp:127.0.0.1:", "udp:127.0.0.1:0", "udp:127.0.0.1:65536", "udp::8111", "udp:[]:8111", "udp:a b:1",
            "udp:127.0.0.1:x", "usb:auto",
        ])
    func refusesEverythingElse(_ text: String) {
        #expect(throws: SecurityKeyError.invalidSpec(text)) { try SecurityKeySpec(parsing: text) }
        #expect("\(SecurityKeyError.invalidSpec(text))".contains("use hidraw:/dev/hidrawN, udp:HOST:PORT or auto"))
    }
}
