export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
cd microbench && NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P timeout 240 torchrun --nproc_per_node 2 mb_p2p_wait_gemm.py --out $OUT/p2p_wait_gemm.json > $OUT/p2p_wait_gemm_log.txt 2>&1; echo rc=$?
grep -v "NCCL INFO" $OUT/p2p_wait_gemm_log.txt | grep -v -i warn | tail -12
grep -E "Channel [0-9]+/[0-9]+|p2p|P2P" $OUT/p2p_wait_gemm_log.txt | grep -v "via P2P/CUMEM" | head -8
grep -c "via P2P" $OUT/p2p_wait_gemm_log.txt
