/// One scanner that many sessions use in turn: each session starts and stops it, and its `close()` leaves the radio
/// open for the next one; the owner closes `scanner` itself. For a computer that keeps its radio open across
/// ceremonies (the benchmarks), where each session would otherwise close it.
public struct SharedScanner: ProximityScanner {
    public let scanner: any ProximityScanner

    public init(_ scanner: any ProximityScanner) { self.scanner = scanner }

    public func startScanning(_ onAdvert: @escaping @Sendable ([UInt8]) -> Void) async throws(ProximityError) {
        try await scanner.startScanning(onAdvert)
    }

    public func stopScanning() async { await scanner.stopScanning() }

    /// Stops scanning; the radio stays open.
    public func close() async { await scanner.stopScanning() }
}
