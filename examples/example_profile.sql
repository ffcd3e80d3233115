-- example_profile.sql: the bundled example profile for nsystrace.
--
-- A small, synthetic NVIDIA Nsight Systems SQLite export, shaped like a real nsys 2026.2 export
-- (EXPORT_PRODUCT_VERSION 2026.2.1.210, EXPORT_SCHEMA_VERSION 3.25.0) of a 2-GPU data-parallel PyTorch training job
-- traced with `--trace=cuda,nvtx`. The CREATE TABLE statements are copied verbatim from real exports (2026.2; the
-- TARGET_INFO_GPU / TARGET_INFO_CUDA_DEVICE ones from 2026.1) and the ENUM_* rows are the real enum rows; every other
-- row is synthetic, generated below from a one-step template with recursive CTEs. Deterministic; no random().
--
-- Build:  sqlite3 example_profile.sqlite < examples/example_profile.sql
--
-- What is in it:
--   2 processes 'python3' (DDP ranks): pid 4101 on GPU 0 and pid 4102 on GPU 1 (both 'NVIDIA H100 80GB HBM3').
--     globalPid = 281474976710656 + pid*16777216 (4101 -> 281543780073472, 4102 -> 281543796850688);
--     globalTid = globalPid + tid. Threads per rank: main 'python3' (tid = pid: 4101 / 4102) and 'pt_autograd_0'
--     (tid 4135 / 4136). Rank r uses deviceId r, contextId r + 1, streams 7 (compute, the null stream) and 13 (NCCL).
--   20 training steps per rank, 7 ms apart starting at 2000000000 ns (plus up to ~151 us of per-step jitter; rank 1
--     is 37.25 us behind rank 0). Per step and rank:
--     main thread:     NVTX 'step N' (N = 0..19, inline text, default domain 0, int64Value payload N)
--                        mark 'dataloader_next'; cudaMemcpyAsync HtoD 4 MiB (pinned -> device);
--                        'forward' (textId, domain 1 'PyTorch') > 4 x ('aten::linear' > ampere_sgemm_128x64_tn,
--                        'aten::relu' > vectorized_elementwise_kernel), 'aten::cross_entropy_loss' > softmax_warp_forward,
--                        nll_loss_forward_reduce_cuda_kernel_2d;
--                        'backward' (textId, domain 1) while the autograd thread works;
--                        'optimizer' (textId, domain 1) > 'Optimizer.step#SGD.step' > 2 x multi_tensor_apply_kernel;
--                        cudaMemcpyAsync DtoH 4 B (device -> pageable); cudaStreamSynchronize (+ a SYNCHRONIZATION row).
--     pt_autograd_0:   'autograd::engine::evaluate_function: NllLossBackward0' > nll_loss_backward_reduce_cuda_kernel_2d,
--                        4 x ('...: ReluBackward0' > vectorized_elementwise_kernel,
--                             '...: AddmmBackward0' > ampere_sgemm_64x32_sliced1x4_nt, ampere_sgemm_128x64_nn),
--                        2 x 'nccl:all_reduce' > cuLaunchKernelEx (driver API, eventClass 1) >
--                        ncclDevKernel_AllReduce_Sum_f32_RING_LL on stream 13 (overlapping stream 7).
--     Step 0 only: one cudaMemsetAsync of 4096 B (memset on stream 7).
--   Each kernel / memcpy / memset / sync row has the (process, correlationId) of the API call that caused it and starts
--   a few microseconds after it; correlationIds are 1000 + 64*step + 1..31 in each process, so both processes use the
--   same ids (join on process and correlationId). Kernels on one stream never overlap; NVTX ranges nest per thread.
--   Each process has one NVTX domain-create row (eventType 75) naming domain 1 'PyTorch', 1.5 ms before step 0.
--
-- Row counts (every table in the file; 3446 event rows = 3444 timeline events + 2 NVTX domain definitions):
--   META_DATA_EXPORT                     12
--   TARGET_INFO_SESSION_START_TIME        1   (utcEpochNs 1772443800000000000, systemClockNs 1500000000)
--   ENUM_CUDA_MEMCPY_OPER                14
--   ENUM_CUDA_MEM_KIND                    8
--   ENUM_CUPTI_SYNC_TYPE                  5
--   TARGET_INFO_GPU                       2
--   TARGET_INFO_CUDA_DEVICE               4
--   TARGET_INFO_CUDA_STREAM               4
--   PROCESSES                             2
--   StringIds                            33
--   ThreadNames                           4
--   NVTX_EVENTS                        1042   (2 domain create 75, 40 marks 34, 1000 push/pop 59: 26 per step and rank)
--   CUPTI_ACTIVITY_KIND_RUNTIME        1202   (1080 kernel launches: 1000 cudaLaunchKernel_v7000 + 80 cuLaunchKernelEx,
--                                              80 cudaMemcpyAsync_v3020, 2 cudaMemsetAsync_v3020,
--                                              40 cudaStreamSynchronize_v3020)
--   CUPTI_ACTIVITY_KIND_KERNEL         1080   (27 per step and rank: 25 on stream 7, 2 NCCL on stream 13)
--   CUPTI_ACTIVITY_KIND_MEMCPY           80   (40 HtoD copyKind 1, 40 DtoH copyKind 2)
--   CUPTI_ACTIVITY_KIND_MEMSET            2
--   CUPTI_ACTIVITY_KIND_SYNCHRONIZATION  40   (syncType 3, stream synchronize)
--
-- Some exact values: the first event is rank 0's domain-create row at 1998500000; 'step 0' of rank 0 spans
-- 2000000000-2006800000 and of rank 1 2000037250-2006837250; the last event to end is rank 1's 'step 19'
-- (ends at 2139936539). Every run of this script produces identical rows.

BEGIN TRANSACTION;

-- ---------------------------------------------------------------- export metadata and target info

CREATE TABLE META_DATA_EXPORT (
    -- information about nsys export process

    name                        TEXT      NOT NULL,                    -- Name of meta-data record
    value                       TEXT                                   -- Value of meta-data record
);
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_NAME', 'NVIDIA Nsight Systems');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2026.2.1.210');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_DATE', '2026.2');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION', '3.25.0');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION_MAJOR', '3');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION_MINOR', '25');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_SCHEMA_VERSION_MICRO', '0');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PLATFORM', 'linux-desktop');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_ARCH', 'x64');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PARAM_INPUT_FILE', 'example_profile.nsys-rep');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PARAM_OUTPUT_FILE', 'example_profile.sqlite');
INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PARAM_LAZY', 'true');

CREATE TABLE TARGET_INFO_SESSION_START_TIME (
    utcEpochNs                  INTEGER,                               -- UTC Epoch timestamp at start of the capture (ns).
    utcTime                     TEXT,                                  -- Start of the capture in UTC.
    localTime                   TEXT,                                  -- Start of the capture in local time of target.
    systemClockNs               INTEGER                                -- Target system clock timestamp at start of the capture (ns).
);
INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (1772443800000000000, '2026-03-02T09:30:00', '2026-03-02T09:30:00', 1500000000);

CREATE TABLE ENUM_CUDA_MEMCPY_OPER (
    -- CUDA memcpy operation labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value.
    name                        TEXT,                                  -- Enum symbol name.
    label                       TEXT                                   -- Enum human name.
);
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(0,'CUDA_MEMCPY_KIND_UNKNOWN','Unknown');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(1,'CUDA_MEMCPY_KIND_HTOD','Host-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(2,'CUDA_MEMCPY_KIND_DTOH','Device-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(3,'CUDA_MEMCPY_KIND_HTOA','Host-to-Array');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(4,'CUDA_MEMCPY_KIND_ATOH','Array-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(5,'CUDA_MEMCPY_KIND_ATOA','Array-to-Array');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(6,'CUDA_MEMCPY_KIND_ATOD','Array-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(7,'CUDA_MEMCPY_KIND_DTOA','Device-to-Array');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(8,'CUDA_MEMCPY_KIND_DTOD','Device-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(9,'CUDA_MEMCPY_KIND_HTOH','Host-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(10,'CUDA_MEMCPY_KIND_PTOP','Peer-to-Peer');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(11,'CUDA_MEMCPY_KIND_UVM_HTOD','Unified Host-to-Device');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(12,'CUDA_MEMCPY_KIND_UVM_DTOH','Unified Device-to-Host');
INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES(13,'CUDA_MEMCPY_KIND_UVM_DTOD','Unified Device-to-Device');

CREATE TABLE ENUM_CUDA_MEM_KIND (
    -- CUDA memory kind labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value.
    name                        TEXT,                                  -- Enum symbol name.
    label                       TEXT                                   -- Enum human name.
);
INSERT INTO ENUM_CUDA_MEM_KIND VALUES(0,'CUDA_MEMOPR_MEMORY_KIND_PAGEABLE','Pageable');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES(1,'CUDA_MEMOPR_MEMORY_KIND_PINNED','Pinned');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES(2,'CUDA_MEMOPR_MEMORY_KIND_DEVICE','Device');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES(3,'CUDA_MEMOPR_MEMORY_KIND_ARRAY','Array');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES(4,'CUDA_MEMOPR_MEMORY_KIND_MANAGED','Managed');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES(5,'CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC','Device Static');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES(6,'CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC','Managed Static');
INSERT INTO ENUM_CUDA_MEM_KIND VALUES(7,'CUDA_MEMOPR_MEMORY_KIND_UNKNOWN','Unknown');

CREATE TABLE ENUM_CUPTI_SYNC_TYPE (
    -- CUPTI synchronization type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value.
    name                        TEXT,                                  -- Enum symbol name.
    label                       TEXT                                   -- Enum human name.
);
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES(0,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_UNKNOWN','Unknown');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES(1,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE','Event sync');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES(2,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT','Stream wait sync');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES(3,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE','Stream sync');
INSERT INTO ENUM_CUPTI_SYNC_TYPE VALUES(4,'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE','Context sync');

CREATE TABLE TARGET_INFO_GPU (
    vmId                        INTEGER   NOT NULL,                    -- Serialized GlobalId.
    id                          INTEGER   NOT NULL,                    -- Device ID.
    name                        TEXT,                                  -- Device name.
    busLocation                 TEXT,                                  -- PCI bus location.
    isDiscrete                  INTEGER,                               -- True if discrete, false if integrated.
    l2CacheSize                 INTEGER,                               -- Size of L2 cache (B).
    totalMemory                 INTEGER,                               -- Total amount of memory on the device (B).
    memoryBandwidth             INTEGER,                               -- Amount of memory transferred (B).
    clockRate                   INTEGER,                               -- Clock frequency (Hz).
    smCount                     INTEGER,                               -- Number of multiprocessors on the device.
    pwGpuId                     INTEGER,                               -- PerfWorks GPU ID.
    uuid                        TEXT,                                  -- Device UUID.
    luid                        INTEGER,                               -- Device LUID.
    chipName                    TEXT,                                  -- Chip name.
    cuDevice                    INTEGER,                               -- CUDA device ID.
    ctxswDevPath                TEXT,                                  -- GPU context switch device node path.
    ctrlDevPath                 TEXT,                                  -- GPU control device node path.
    revision                    INTEGER,                               -- Revision number.
    nodeMask                    INTEGER,                               -- Device node mask.
    constantMemory              INTEGER,                               -- Memory available on device for __constant__ variables (B).
    maxIPC                      INTEGER,                               -- Maximum instructions per count.
    maxRegistersPerBlock        INTEGER,                               -- Maximum number of 32-bit registers available per block.
    maxShmemPerBlock            INTEGER,                               -- Maximum optin shared memory per block.
    maxShmemPerBlockOptin       INTEGER,                               -- Maximum optin shared memory per block.
    maxShmemPerSm               INTEGER,                               -- Maximum shared memory available per multiprocessor (B).
    maxRegistersPerSm           INTEGER,                               -- Maximum number of 32-bit registers available per multiprocessor.
    threadsPerWarp              INTEGER,                               -- Warp size in threads.
    asyncEngines                INTEGER,                               -- Number of asynchronous engines.
    maxWarpsPerSm               INTEGER,                               -- Maximum number of warps per multiprocessor.
    maxBlocksPerSm              INTEGER,                               -- Maximum number of blocks per multiprocessor.
    maxThreadsPerBlock          INTEGER,                               -- Maximum number of threads per block.
    maxBlockDimX                INTEGER,                               -- Maximum X-dimension of a block.
    maxBlockDimY                INTEGER,                               -- Maximum Y-dimension of a block.
    maxBlockDimZ                INTEGER,                               -- Maximum Z-dimension of a block.
    maxGridDimX                 INTEGER,                               -- Maximum X-dimension of a grid.
    maxGridDimY                 INTEGER,                               -- Maximum Y-dimension of a grid.
    maxGridDimZ                 INTEGER,                               -- Maximum Z-dimension of a grid.
    computeMajor                INTEGER,                               -- Major compute capability version number.
    computeMinor                INTEGER,                               -- Minor compute capability version number.
    smMajor                     INTEGER,                               -- Major multiprocessor version number.
    smMinor                     INTEGER                                -- Minor multiprocessor version number.
);
INSERT INTO TARGET_INFO_GPU VALUES (281474976710656, 0, 'NVIDIA H100 80GB HBM3', '0000:18:00.0', 1, 52428800, 85520809984, 3352320000000, 1980000000, 132, 0, '8a1c3f00-0000-4000-8000-000000000000', 0, 'GH100', 0, '', '', 161, 0, 65536, 4, 65536, 49152, 232448, 233472, 65536, 32, 3, 64, 32, 1024, 1024, 1024, 64, 2147483647, 65535, 65535, 9, 0, 9, 0);
INSERT INTO TARGET_INFO_GPU VALUES (281474976710656, 1, 'NVIDIA H100 80GB HBM3', '0000:2A:00.0', 1, 52428800, 85520809984, 3352320000000, 1980000000, 132, 1, '8a1c3f00-0000-4000-8000-000000000001', 0, 'GH100', 1, '', '', 161, 0, 65536, 4, 65536, 49152, 232448, 233472, 65536, 32, 3, 64, 32, 1024, 1024, 1024, 64, 2147483647, 65535, 65535, 9, 0, 9, 0);

CREATE TABLE TARGET_INFO_CUDA_DEVICE (
    gpuId                       INTEGER,                               -- GPU ID.
    cudaId                      INTEGER   NOT NULL,                    -- CUDA device ID.
    pid                         INTEGER   NOT NULL,                    -- Process ID.
    uuid                        TEXT,                                  -- Device UUID.
    numMultiprocessors          INTEGER                                -- Number of SMs available on the device.
);
INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 4101, '8a1c3f00-0000-4000-8000-000000000000', 132);
INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (1, 1, 4101, '8a1c3f00-0000-4000-8000-000000000001', 132);
INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 0, 4102, '8a1c3f00-0000-4000-8000-000000000000', 132);
INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (1, 1, 4102, '8a1c3f00-0000-4000-8000-000000000001', 132);

CREATE TABLE TARGET_INFO_CUDA_STREAM (
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    hwId                        INTEGER   NOT NULL,                    -- Hardware ID.
    vmId                        INTEGER   NOT NULL,                    -- VM ID.
    processId                   INTEGER   NOT NULL,                    -- Process ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    priority                    INTEGER   NOT NULL,                    -- Priority of the stream.
    flag                        INTEGER   NOT NULL                     -- REFERENCES ENUM_CUPTI_STREAM_TYPE(id)
);
INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (7, 0, 1, 4101, 1, 0, 3);
INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (13, 0, 1, 4101, 1, 0, 2);
INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (7, 0, 1, 4102, 2, 0, 3);
INSERT INTO TARGET_INFO_CUDA_STREAM VALUES (13, 0, 1, 4102, 2, 0, 2);

CREATE TABLE PROCESSES (
    -- Names and identifiers of processes captured in the report.

    globalPid                   INTEGER,                               -- Serialized GlobalId.
    pid                         INTEGER,                               -- The process ID.
    name                        TEXT                                   -- The process name.
);
INSERT INTO PROCESSES VALUES (281543780073472, 4101, 'python3');
INSERT INTO PROCESSES VALUES (281543796850688, 4102, 'python3');

CREATE TABLE StringIds (
    -- Consolidation of repetitive string values.

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- ID reference value.
    value                       TEXT      NOT NULL                     -- String value.
);
INSERT INTO StringIds VALUES (1, 'python3');
INSERT INTO StringIds VALUES (2, 'pt_autograd_0');
INSERT INTO StringIds VALUES (3, 'cudaLaunchKernel_v7000');
INSERT INTO StringIds VALUES (4, 'cuLaunchKernelEx');
INSERT INTO StringIds VALUES (5, 'cudaMemcpyAsync_v3020');
INSERT INTO StringIds VALUES (6, 'cudaMemsetAsync_v3020');
INSERT INTO StringIds VALUES (7, 'cudaStreamSynchronize_v3020');
INSERT INTO StringIds VALUES (8, 'forward');
INSERT INTO StringIds VALUES (9, 'backward');
INSERT INTO StringIds VALUES (10, 'optimizer');
INSERT INTO StringIds VALUES (20, 'ampere_sgemm_128x64_tn');
INSERT INTO StringIds VALUES (21, 'ampere_sgemm_64x32_sliced1x4_nt');
INSERT INTO StringIds VALUES (22, 'ampere_sgemm_128x64_nn');
INSERT INTO StringIds VALUES (23, 'vectorized_elementwise_kernel');
INSERT INTO StringIds VALUES (24, 'void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::ClampMinScalarFunctor<float>, std::array<char*, 2ul> >(int, at::native::(anonymous namespace)::ClampMinScalarFunctor<float>, std::array<char*, 2ul>)');
INSERT INTO StringIds VALUES (25, '_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_12_GLOBAL__N_121ClampMinScalarFunctorIfEESt5arrayIPcLm2EEEEviT0_T1_');
INSERT INTO StringIds VALUES (26, 'void at::native::vectorized_elementwise_kernel<4, at::native::(anonymous namespace)::ThresholdBackwardFunctor<float>, std::array<char*, 3ul> >(int, at::native::(anonymous namespace)::ThresholdBackwardFunctor<float>, std::array<char*, 3ul>)');
INSERT INTO StringIds VALUES (27, '_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_12_GLOBAL__N_124ThresholdBackwardFunctorIfEESt5arrayIPcLm3EEEEviT0_T1_');
INSERT INTO StringIds VALUES (28, 'softmax_warp_forward');
INSERT INTO StringIds VALUES (29, 'void (anonymous namespace)::softmax_warp_forward<float, float, float, 4, true, false>(float*, float const*, int, int, int, bool const*, int, bool)');
INSERT INTO StringIds VALUES (30, '_ZN12_GLOBAL__N_120softmax_warp_forwardIfffLi4ELb1ELb0EEEvPT0_PKT_iiiPKbib');
INSERT INTO StringIds VALUES (31, 'nll_loss_forward_reduce_cuda_kernel_2d');
INSERT INTO StringIds VALUES (32, 'void at::native::(anonymous namespace)::nll_loss_forward_reduce_cuda_kernel_2d<float, long, long>(float*, float*, float const*, long const*, float const*, bool, long, long, long, long)');
INSERT INTO StringIds VALUES (33, '_ZN2at6native12_GLOBAL__N_138nll_loss_forward_reduce_cuda_kernel_2dIfllEEvPT_S4_PKS3_PKT0_S6_bT1_SA_SA_SA_');
INSERT INTO StringIds VALUES (34, 'nll_loss_backward_reduce_cuda_kernel_2d');
INSERT INTO StringIds VALUES (35, 'void at::native::(anonymous namespace)::nll_loss_backward_reduce_cuda_kernel_2d<float, long>(float*, float const*, long const*, float const*, float const*, bool, int, int, long, long)');
INSERT INTO StringIds VALUES (36, '_ZN2at6native12_GLOBAL__N_139nll_loss_backward_reduce_cuda_kernel_2dIflEEvPT_PKS3_PKT0_S6_S6_biill');
INSERT INTO StringIds VALUES (37, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL');
INSERT INTO StringIds VALUES (38, 'ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)');
INSERT INTO StringIds VALUES (39, '_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE');
INSERT INTO StringIds VALUES (40, 'multi_tensor_apply_kernel');
INSERT INTO StringIds VALUES (41, 'void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::FusedSgdMathFunctor<float, 2>, float>(at::native::(anonymous namespace)::TensorListMetadata<2>, at::native::(anonymous namespace)::FusedSgdMathFunctor<float, 2>, float)');
INSERT INTO StringIds VALUES (42, '_ZN2at6native12_GLOBAL__N_125multi_tensor_apply_kernelINS1_18TensorListMetadataILi2EEENS1_19FusedSgdMathFunctorIfLi2EEEJfEEEvT_T0_DpT1_');

CREATE TABLE ThreadNames (
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Thread name
    priority                    INTEGER,                               -- Priority of the thread.
    globalTid                   INTEGER                                -- Serialized GlobalId.
);
INSERT INTO ThreadNames VALUES (1, 20, 281543780077573);
INSERT INTO ThreadNames VALUES (2, 20, 281543780077607);
INSERT INTO ThreadNames VALUES (1, 20, 281543796854790);
INSERT INTO ThreadNames VALUES (2, 20, 281543796854824);

-- ---------------------------------------------------------------- event tables (filled below)

CREATE TABLE NVTX_EVENTS (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER,                               -- Event end timestamp (ns).
    eventType                   INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_TYPE(id)
    rangeId                     INTEGER,                               -- Correlation ID returned from a nvtxRangeStart call.
    category                    INTEGER,                               -- User-controlled ID that can be used to group events.
    color                       INTEGER,                               -- Encoded ARGB color value.
    text                        TEXT,                                  -- Explicit name/text (non-registered string)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    endGlobalTid                INTEGER,                               -- Serialized GlobalId.
    textId                      INTEGER,                               -- REFERENCES StringIds(id) -- Registered NVTX domain/string
    domainId                    INTEGER,                               -- User-controlled ID that can be used to group events.
    uint64Value                 INTEGER,                               -- One of possible payload value union members.
    int64Value                  INTEGER,                               -- One of possible payload value union members.
    doubleValue                 REAL,                                  -- One of possible payload value union members.
    uint32Value                 INTEGER,                               -- One of possible payload value union members.
    int32Value                  INTEGER,                               -- One of possible payload value union members.
    floatValue                  REAL,                                  -- One of possible payload value union members.
    jsonTextId                  INTEGER,                               -- One of possible payload value union members.
    jsonText                    TEXT,                                  -- One of possible payload value union members.
    binaryData                  TEXT                                   -- Binary payload. See docs for format.
);

CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- ID used to identify events that this function call has triggered.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    returnValue                 INTEGER   NOT NULL,                    -- Return value of the function call.
    callchainId                 INTEGER                                -- REFERENCES CUDA_CALLCHAINS(id)
);

CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    greenContextId              INTEGER,                               -- Green context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    demangledName               INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Kernel function name w/ templates
    shortName                   INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Base kernel function name
    mangledName                 INTEGER,                               -- REFERENCES StringIds(id) -- Raw C++ mangled kernel function name
    launchType                  INTEGER,                               -- REFERENCES ENUM_CUDA_KERNEL_LAUNCH_TYPE(id)
    cacheConfig                 INTEGER,                               -- REFERENCES ENUM_CUDA_FUNC_CACHE_CONFIG(id)
    registersPerThread          INTEGER   NOT NULL,                    -- Number of registers required for each thread executing the kernel.
    gridX                       INTEGER   NOT NULL,                    -- X-dimension grid size.
    gridY                       INTEGER   NOT NULL,                    -- Y-dimension grid size.
    gridZ                       INTEGER   NOT NULL,                    -- Z-dimension grid size.
    blockX                      INTEGER   NOT NULL,                    -- X-dimension block size.
    blockY                      INTEGER   NOT NULL,                    -- Y-dimension block size.
    blockZ                      INTEGER   NOT NULL,                    -- Z-dimension block size.
    staticSharedMemory          INTEGER   NOT NULL,                    -- Static shared memory allocated for the kernel (B).
    dynamicSharedMemory         INTEGER   NOT NULL,                    -- Dynamic shared memory reserved for the kernel (B).
    localMemoryPerThread        INTEGER   NOT NULL,                    -- Amount of local memory reserved for each thread (B).
    localMemoryTotal            INTEGER   NOT NULL,                    -- Total amount of local memory reserved for the kernel (B).
    gridId                      INTEGER   NOT NULL,                    -- Unique grid ID of the kernel assigned at runtime.
    sharedMemoryExecuted        INTEGER,                               -- Shared memory size set by the driver.
    graphNodeId                 INTEGER,                               -- REFERENCES CUDA_GRAPH_NODE_EVENTS(graphNodeId)
    sharedMemoryLimitConfig     INTEGER,                               -- REFERENCES ENUM_CUDA_SHARED_MEM_LIMIT_CONFIG(id)
    qmdBulkReleaseDone          INTEGER,                               -- QMD bulk release done timestamp from CWD events.
    qmdPreexitDone              INTEGER,                               -- QMD pre-exit done timestamp from CWD events.
    qmdLastCtaDone              INTEGER,                               -- QMD last CTA done timestamp from CWD events.
    graphId                     INTEGER,                               -- Kernel graph ID.
    clusterX                    INTEGER,                               -- Cluster X dimension.
    clusterY                    INTEGER,                               -- Cluster Y dimension.
    clusterZ                    INTEGER,                               -- Cluster Z dimension.
    clusterSchedulingPolicy     INTEGER,                               -- Cluster scheduling policy.
    maxPotentialClusterSize     INTEGER,                               -- Maximum potential cluster size.
    maxActiveClusters           INTEGER,                               -- Maximum active clusters.
    sharedMemoryRequestedPercentage   INTEGER,                         -- Shared memory requested percentage.
    tensorSizeMinusOneElements   TEXT      NOT NULL                    -- TMA descriptor tensor size minus one elements array.
);

CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    greenContextId              INTEGER,                               -- Green context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    bytes                       INTEGER   NOT NULL,                    -- Number of bytes transferred (B).
    copyKind                    INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUDA_MEMCPY_OPER(id)
    deprecatedSrcId             INTEGER,                               -- Deprecated, use srcDeviceId instead.
    srcKind                     INTEGER,                               -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    dstKind                     INTEGER,                               -- REFERENCES ENUM_CUDA_MEM_KIND(id)
    srcDeviceId                 INTEGER,                               -- Source device ID.
    srcContextId                INTEGER,                               -- Source context ID.
    dstDeviceId                 INTEGER,                               -- Destination device ID.
    dstContextId                INTEGER,                               -- Destination context ID.
    migrationCause              INTEGER,                               -- REFERENCES ENUM_CUDA_UNIF_MEM_MIGRATION(id)
    graphNodeId                 INTEGER,                               -- REFERENCES CUDA_GRAPH_NODE_EVENTS(graphNodeId)
    virtualAddress              INTEGER,                               -- Virtual base address of the page/s being transferred.
    copyCount                   INTEGER                                -- The total number of memcopy operations traced in this record. In CUDA MemcpyBatchAsync APIs, multiple memcpy operations may be batched together for optimization purposes based on certain heuristics.
);

CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    greenContextId              INTEGER,                               -- Green context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- REFERENCES CUPTI_ACTIVITY_KIND_RUNTIME(correlationId)
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    value                       INTEGER   NOT NULL,                    -- Value assigned to memory.
    bytes                       INTEGER   NOT NULL,                    -- Number of bytes set (B).
    graphNodeId                 INTEGER,                               -- REFERENCES CUDA_GRAPH_NODE_EVENTS(graphNodeId)
    memKind                     INTEGER                                -- REFERENCES ENUM_CUDA_MEM_KIND(id)
);

CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    deviceId                    INTEGER   NOT NULL,                    -- Device ID.
    contextId                   INTEGER   NOT NULL,                    -- Context ID.
    greenContextId              INTEGER,                               -- Green context ID.
    streamId                    INTEGER   NOT NULL,                    -- Stream ID.
    correlationId               INTEGER,                               -- Correlation ID of the synchronization API to which this result is associated.
    globalPid                   INTEGER,                               -- Serialized GlobalId.
    deprecatedSyncType          INTEGER,                               -- Deprecated, use syncType instead. For older report, REFERENCES ENUM_CUPTI_SYNC_TYPE(id)
    syncType                    INTEGER   NOT NULL,                    -- REFERENCES ENUM_CUPTI_SYNC_TYPE(id)
    eventId                     INTEGER   NOT NULL,                    -- Event ID for which the synchronization API is called.
    eventSyncId                 INTEGER                                -- CUDA Event Sync ID to link the synchronization API to associated event record API.
);

-- ---------------------------------------------------------------- one training step, as a template
-- Every row of step_template is one thing that happens in every step of every rank (firstStepOnly = 1: step 0
-- only). Times are microseconds from the start of the step; role says which thread does it ('main' = the rank's
-- python3 thread, 'autograd' = its pt_autograd_0 thread). kind:
--   step / range / mark   NVTX push/pop range (59) or mark (34)
--   launch / nccl         API call [t0,t1] (cudaLaunchKernel / cuLaunchKernelEx) and the kernel it launches [g0,g1]
--   h2d / d2h / memset    cudaMemcpyAsync / cudaMemsetAsync [t0,t1] and the copy / memset [g0,g1] on stream 7
--   sync                  cudaStreamSynchronize [t0,t1] and its CUPTI synchronization record [g0,g1]
-- corr numbers the API calls of a step in time order (correlationId = 1000 + 64*step + corr).
CREATE TEMP TABLE step_template (
    seq INTEGER PRIMARY KEY, role TEXT NOT NULL, kind TEXT NOT NULL,
    t0 INTEGER NOT NULL, t1 INTEGER, g0 INTEGER, g1 INTEGER,
    text TEXT, textId INTEGER, domainId INTEGER, color INTEGER,
    apiName INTEGER, eventClass INTEGER, corr INTEGER,
    shortName INTEGER, demangledName INTEGER, mangledName INTEGER,
    gridX INTEGER, gridY INTEGER, blockX INTEGER, regs INTEGER, staticSmem INTEGER, dynamicSmem INTEGER,
    smemExecuted INTEGER, streamId INTEGER,
    bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER,
    firstStepOnly INTEGER NOT NULL DEFAULT 0
);

-- NVTX ranges and marks. 'step N' (inline text, default domain 0; N filled in later), the registered strings
-- 'forward' / 'backward' / 'optimizer' (textId 8/9/10) in domain 1 'PyTorch', and inline op ranges in domain 0.
INSERT INTO step_template (seq, role, kind, t0, t1, text, textId, domainId, color) VALUES
    ( 1, 'main',     'step',  0,    6800, 'step',                     NULL, 0, NULL),
    ( 2, 'main',     'mark',  20,   NULL, 'dataloader_next',          NULL, 0, 4285970688),
    ( 3, 'main',     'range', 100,  1950, NULL,                       8,    1, NULL),
    ( 4, 'main',     'range', 1700, 1900, 'aten::cross_entropy_loss', NULL, 0, NULL),
    ( 5, 'main',     'range', 2000, 5600, NULL,                       9,    1, NULL),
    ( 6, 'autograd', 'range', 2050, 2150, 'autograd::engine::evaluate_function: NllLossBackward0', NULL, 0, NULL),
    ( 7, 'main',     'range', 5700, 6500, NULL,                       10,   1, NULL),
    ( 8, 'main',     'range', 5720, 6450, 'Optimizer.step#SGD.step',  NULL, 0, NULL);

-- Forward: 4 layers, each 'aten::linear' (one sgemm) then 'aten::relu' (one elementwise kernel), 400 us apart.
WITH RECURSIVE layer(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM layer WHERE i < 3)
INSERT INTO step_template (seq, role, kind, t0, t1, text, domainId)
SELECT 10 + 2 * i, 'main', 'range', 120 + 400 * i, 300 + 400 * i, 'aten::linear', 0 FROM layer
UNION ALL
SELECT 11 + 2 * i, 'main', 'range', 320 + 400 * i, 440 + 400 * i, 'aten::relu', 0 FROM layer;

WITH RECURSIVE layer(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM layer WHERE i < 3)
INSERT INTO step_template (seq, role, kind, t0, t1, g0, g1, apiName, eventClass, shortName, demangledName,
                           mangledName, gridX, gridY, blockX, regs, staticSmem, dynamicSmem, smemExecuted, streamId)
SELECT 20 + 2 * i, 'main', 'launch', 150 + 400 * i, 162 + 400 * i, 156 + 400 * i, 306 + 400 * i,
       3, 0, 20, 20, 20, 8, 16, 128, 122, 16384, 0, 65536, 7 FROM layer
UNION ALL
SELECT 21 + 2 * i, 'main', 'launch', 350 + 400 * i, 360 + 400 * i, 356 + 400 * i, 386 + 400 * i,
       3, 0, 23, 24, 25, 1024, 1, 128, 24, 0, 0, 32768, 7 FROM layer;

-- Loss: softmax + nll_loss forward (inside 'aten::cross_entropy_loss').
INSERT INTO step_template (seq, role, kind, t0, t1, g0, g1, apiName, eventClass, shortName, demangledName,
                           mangledName, gridX, gridY, blockX, regs, staticSmem, dynamicSmem, smemExecuted, streamId)
VALUES
    (30, 'main', 'launch', 1720, 1731, 1726, 1746, 3, 0, 28, 29, 30, 64, 1, 128, 30, 0, 0, 32768, 7),
    (31, 'main', 'launch', 1760, 1770, 1766, 1778, 3, 0, 31, 32, 33, 1, 1, 32, 32, 2048, 0, 32768, 7),
-- Backward, on the autograd thread: nll_loss backward, then per layer (last first) ReluBackward0 (one
-- elementwise kernel) and AddmmBackward0 (two sgemms), 800 us apart.
    (32, 'autograd', 'launch', 2070, 2080, 2076, 2090, 3, 0, 34, 35, 36, 1, 1, 32, 16, 0, 0, 32768, 7);

WITH RECURSIVE layer(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM layer WHERE j < 3)
INSERT INTO step_template (seq, role, kind, t0, t1, text, domainId)
SELECT 40 + 2 * j, 'autograd', 'range', 2200 + 800 * j, 2320 + 800 * j,
       'autograd::engine::evaluate_function: ReluBackward0', 0 FROM layer
UNION ALL
SELECT 41 + 2 * j, 'autograd', 'range', 2350 + 800 * j, 2700 + 800 * j,
       'autograd::engine::evaluate_function: AddmmBackward0', 0 FROM layer;

WITH RECURSIVE layer(j) AS (SELECT 0 UNION ALL SELECT j + 1 FROM layer WHERE j < 3)
INSERT INTO step_template (seq, role, kind, t0, t1, g0, g1, apiName, eventClass, shortName, demangledName,
                           mangledName, gridX, gridY, blockX, regs, staticSmem, dynamicSmem, smemExecuted, streamId)
SELECT 50 + 3 * j, 'autograd', 'launch', 2230 + 800 * j, 2240 + 800 * j, 2236 + 800 * j, 2260 + 800 * j,
       3, 0, 23, 26, 27, 1024, 1, 128, 24, 0, 0, 32768, 7 FROM layer
UNION ALL
SELECT 51 + 3 * j, 'autograd', 'launch', 2380 + 800 * j, 2392 + 800 * j, 2386 + 800 * j, 2526 + 800 * j,
       3, 0, 21, 21, 21, 16, 32, 128, 86, 12288, 0, 65536, 7 FROM layer
UNION ALL
SELECT 52 + 3 * j, 'autograd', 'launch', 2450 + 800 * j, 2462 + 800 * j, 2530 + 800 * j, 2670 + 800 * j,
       3, 0, 22, 22, 22, 8, 16, 128, 122, 16384, 0, 65536, 7 FROM layer;

-- DDP gradient buckets: after layers 2 and 0 (j = 1, 3) an NCCL all-reduce, launched through the driver API
-- (cuLaunchKernelEx, eventClass 1) onto the NCCL stream 13, where it overlaps the compute stream 7.
WITH RECURSIVE bucket(j) AS (SELECT 1 UNION ALL SELECT j + 2 FROM bucket WHERE j < 3)
INSERT INTO step_template (seq, role, kind, t0, t1, text, domainId)
SELECT 70 + j, 'autograd', 'range', 2720 + 800 * j, 2800 + 800 * j, 'nccl:all_reduce', 0 FROM bucket;

WITH RECURSIVE bucket(j) AS (SELECT 1 UNION ALL SELECT j + 2 FROM bucket WHERE j < 3)
INSERT INTO step_template (seq, role, kind, t0, t1, g0, g1, apiName, eventClass, shortName, demangledName,
                           mangledName, gridX, gridY, blockX, regs, staticSmem, dynamicSmem, smemExecuted, streamId)
SELECT 75 + j, 'autograd', 'nccl', 2740 + 800 * j, 2756 + 800 * j, 2750 + 800 * j, 2950 + 800 * j,
       4, 1, 37, 38, 39, 4, 1, 512, 90, 17440, 0, 135168, 13 FROM bucket;

-- Optimizer (inside 'Optimizer.step#SGD.step'): two fused SGD kernels; the second one waits for the first.
INSERT INTO step_template (seq, role, kind, t0, t1, g0, g1, apiName, eventClass, shortName, demangledName,
                           mangledName, gridX, gridY, blockX, regs, staticSmem, dynamicSmem, smemExecuted, streamId)
VALUES
    (80, 'main', 'launch', 5750, 5762, 5756, 5856, 3, 0, 40, 41, 42, 320, 1, 512, 40, 0, 0, 32768, 7),
    (81, 'main', 'launch', 5800, 5812, 5860, 5960, 3, 0, 40, 41, 42, 320, 1, 512, 40, 0, 0, 32768, 7);

-- Memory traffic on stream 7: the input batch HtoD (pinned -> device, 4 MiB) at the start of the step, a memset
-- of a 4 KiB gradient bucket in step 0 only, the loss DtoH (device -> pageable, 4 B) and the stream
-- synchronization of loss.item() at the end.
INSERT INTO step_template (seq, role, kind, t0, t1, g0, g1, apiName, eventClass, streamId, bytes, copyKind,
                           srcKind, dstKind, firstStepOnly) VALUES
    (90, 'main', 'h2d',    40,   52,   48,   132,  5, 0, 7, 4194304, 1, 1, 2, 0),
    (91, 'main', 'memset', 60,   68,   135,  137,  6, 0, 7, 4096, NULL, NULL, NULL, 1),
    (92, 'main', 'd2h',    6550, 6562, 6556, 6558, 5, 0, 7, 4, 2, 2, 0, 0),
    (93, 'main', 'sync',   6570, 6590, 6572, 6588, 7, 0, 7, NULL, NULL, NULL, NULL, 0);

UPDATE step_template SET corr = (SELECT count(*) FROM step_template AS e
                                 WHERE e.apiName IS NOT NULL AND e.t0 <= step_template.t0)
WHERE apiName IS NOT NULL;

-- ---------------------------------------------------------------- 2 ranks x 20 steps
-- Rank r is pid 4101 + r on GPU r (context r + 1); its main thread has tid = pid, its pt_autograd_0 thread tid
-- 4135 + r. Steps are 7 ms apart with a deterministic jitter of up to ~151 us; rank 1 runs 37.25 us behind rank 0.
CREATE TEMP TABLE step_instance AS
WITH RECURSIVE step(s) AS (SELECT 0 UNION ALL SELECT s + 1 FROM step WHERE s < 19),
     rank(r) AS (VALUES (0), (1))
SELECT s, r, 4101 + r AS pid,
       281474976710656 + (4101 + r) * 16777216 AS globalPid,
       281474976710656 + (4101 + r) * 16777216 + 4101 + r AS mainTid,
       281474976710656 + (4101 + r) * 16777216 + 4135 + r AS autogradTid,
       2000000000 + s * 7000000 + ((s * 37) % 151) * 1000 + (s * 331) % 1000 + r * 37250 AS base
FROM step, rank;

-- ---------------------------------------------------------------- NVTX_EVENTS
-- Each process registers domain 1 'PyTorch' before its first step.
INSERT INTO NVTX_EVENTS (start, end, eventType, text, globalTid, domainId)
SELECT base - 1500000, NULL, 75, 'PyTorch', mainTid, 1 FROM step_instance WHERE s = 0 ORDER BY r;

INSERT INTO NVTX_EVENTS (start, end, eventType, color, text, globalTid, textId, domainId, int64Value)
SELECT i.base + 1000 * t.t0,
       CASE WHEN t.t1 IS NULL THEN NULL ELSE i.base + 1000 * t.t1 END,
       CASE t.kind WHEN 'mark' THEN 34 ELSE 59 END,
       t.color,
       CASE t.kind WHEN 'step' THEN 'step ' || i.s ELSE t.text END,
       CASE t.role WHEN 'main' THEN i.mainTid ELSE i.autogradTid END,
       t.textId, t.domainId,
       CASE t.kind WHEN 'step' THEN i.s END
FROM step_instance AS i JOIN step_template AS t ON t.kind IN ('step', 'range', 'mark')
ORDER BY 1, i.r, t.seq;

-- ---------------------------------------------------------------- CUPTI_ACTIVITY_KIND_RUNTIME
INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME (start, end, eventClass, globalTid, correlationId, nameId, returnValue,
                                         callchainId)
SELECT i.base + 1000 * t.t0, i.base + 1000 * t.t1, t.eventClass,
       CASE t.role WHEN 'main' THEN i.mainTid ELSE i.autogradTid END,
       1000 + 64 * i.s + t.corr, t.apiName, 0, NULL
FROM step_instance AS i JOIN step_template AS t ON t.apiName IS NOT NULL
WHERE t.firstStepOnly = 0 OR i.s = 0
ORDER BY 1, i.r;

-- ---------------------------------------------------------------- CUPTI_ACTIVITY_KIND_KERNEL
INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL (start, end, deviceId, contextId, greenContextId, streamId, correlationId,
    globalPid, demangledName, shortName, mangledName, launchType, cacheConfig, registersPerThread, gridX, gridY,
    gridZ, blockX, blockY, blockZ, staticSharedMemory, dynamicSharedMemory, localMemoryPerThread, localMemoryTotal,
    gridId, sharedMemoryExecuted, graphNodeId, sharedMemoryLimitConfig, qmdBulkReleaseDone, qmdPreexitDone,
    qmdLastCtaDone, graphId, clusterX, clusterY, clusterZ, clusterSchedulingPolicy, maxPotentialClusterSize,
    maxActiveClusters, sharedMemoryRequestedPercentage, tensorSizeMinusOneElements)
SELECT i.base + 1000 * t.g0, i.base + 1000 * t.g1, i.r, i.r + 1, 0, t.streamId, 1000 + 64 * i.s + t.corr,
       i.globalPid, t.demangledName, t.shortName, t.mangledName, 1, 1, t.regs, t.gridX, t.gridY,
       1, t.blockX, 1, 1, t.staticSmem, t.dynamicSmem, 0, 0,
       1000 + 64 * i.s + t.corr, t.smemExecuted, NULL, 0, NULL, NULL,
       NULL, NULL, 0, 0, 0, 1, 0,
       0, NULL, '[]'
FROM step_instance AS i JOIN step_template AS t ON t.kind IN ('launch', 'nccl')
ORDER BY 1, i.r;

-- ---------------------------------------------------------------- CUPTI_ACTIVITY_KIND_MEMCPY / MEMSET
INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY (start, end, deviceId, contextId, greenContextId, streamId, correlationId,
    globalPid, bytes, copyKind, deprecatedSrcId, srcKind, dstKind, srcDeviceId, srcContextId, dstDeviceId,
    dstContextId, migrationCause, graphNodeId, virtualAddress, copyCount)
SELECT i.base + 1000 * t.g0, i.base + 1000 * t.g1, i.r, i.r + 1, 0, t.streamId, 1000 + 64 * i.s + t.corr,
       i.globalPid, t.bytes, t.copyKind, NULL, t.srcKind, t.dstKind, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL, 1
FROM step_instance AS i JOIN step_template AS t ON t.kind IN ('h2d', 'd2h')
ORDER BY 1, i.r;

INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET (start, end, deviceId, contextId, greenContextId, streamId, correlationId,
    globalPid, value, bytes, graphNodeId, memKind)
SELECT i.base + 1000 * t.g0, i.base + 1000 * t.g1, i.r, i.r + 1, 0, t.streamId, 1000 + 64 * i.s + t.corr,
       i.globalPid, 0, t.bytes, NULL, 2
FROM step_instance AS i JOIN step_template AS t ON t.kind = 'memset'
WHERE t.firstStepOnly = 0 OR i.s = 0
ORDER BY 1, i.r;

-- ---------------------------------------------------------------- CUPTI_ACTIVITY_KIND_SYNCHRONIZATION
-- syncType 3 = stream synchronize; eventId 4294967295 = no event (as in real exports).
INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start, end, deviceId, contextId, greenContextId, streamId,
    correlationId, globalPid, deprecatedSyncType, syncType, eventId, eventSyncId)
SELECT i.base + 1000 * t.g0, i.base + 1000 * t.g1, i.r, i.r + 1, NULL, t.streamId, 1000 + 64 * i.s + t.corr,
       i.globalPid, NULL, 3, 4294967295, 0
FROM step_instance AS i JOIN step_template AS t ON t.kind = 'sync'
ORDER BY 1, i.r;

DROP TABLE temp.step_template;
DROP TABLE temp.step_instance;

COMMIT;
